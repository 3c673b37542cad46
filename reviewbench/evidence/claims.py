"""The claim ledger: every number a submission claims, re-run in the harness and decided.

Claims come from ``claims.json`` (exact) and from sentences of DESCRIPTION.md that name a metric, a value
and a budget ("normalised accuracy 0.85 at 10 % keep on board A"). Each is bound to a harness run with the
same settings on the dev split, repeated over K seeds (disjoint item sets), and decided:

- ``reproduced``: the claimed value lies within the tolerance of the measured mean;
- ``contradicted``: outside it. The tolerance is derived from the measured seed-to-seed spread
  (2 standard deviations) with a floor of one item's worth for accuracies, and is stated with the verdict.
  A contradiction is ``reproducible`` when every seed alone is outside the tolerance on the same side: only
  that is evidence for FABRICATED_EVIDENCE;
- ``unverifiable``, with the reason: the test split (the arena's, never re-run for an agent), a model that is
  not here, an unknown board or metric, no budget.

A method that errors, times out or returns nothing a run can use at the claimed setting has not reproduced it.
The harness stops a method at its first error, so a re-run (seed) counts as failed at the claimed budget when
the method's first error was there (or it never loaded), and the re-runs after it produce nothing either. A
claim no re-run measured is ``contradicted`` and ``reproducible`` (the error is the proof, as for
FABRICATED_EVIDENCE); one that some re-runs measured is ``contradicted`` without being reproducible. Rows that
failed only because the method had already failed at another budget say nothing about this one: the stage
re-runs that budget alone (``reviewbench.evidence.ledger``).
"""

from __future__ import annotations

import re
from statistics import fmean, pstdev
from typing import Literal

from pydantic import BaseModel

from harness.results import Result, Row
from reviewbench.bundle import Claim

METRICS = {"normalized_accuracy": "normalised accuracy", "accuracy": "normalised accuracy", "kl": "KL to the full cache",
           "top1": "top-1 agreement", "eviction_cost": "eviction cost"}
_METRIC_WORDS = [
    (re.compile(r"normali[sz]ed\s+accuracy|accuracy\s+(?:relative|normali[sz]ed)\s+to\s+the\s+full", re.I), "normalized_accuracy"),
    (re.compile(r"\bKL\b(?:\s+divergence)?", re.I), "kl"),
    (re.compile(r"top-?1(?:\s+agreement)?", re.I), "top1"),
    (re.compile(r"eviction\s+cost", re.I), "eviction_cost"),
    (re.compile(r"\baccuracy\b", re.I), "normalized_accuracy"),
]
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(%)?")
_BUDGET = re.compile(r"(\d+(?:\.\d+)?)\s*%\s*(?:of\s+the\s+(?:cache|kv|context)\s*)?(?:keep|kept|budget|of\s+the)|"
                     r"(?:keep(?:ing)?|budget(?:\s+of)?|at)\s+(\d+(?:\.\d+)?)\s*%|(\d{3,5})\s+tokens\s+per\s+layer", re.I)
_BOARD = re.compile(r"\bboard\s+(A|B_online|B_offline|C)\b")
_MODEL = re.compile(r"\b(llama[\w.\-]*|qwen[\w.\-]*|mistral[\w.\-]*|gemma[\w.\-]*|phi-?\d[\w.\-]*|"
                    r"smollm2?[\w.\-]*)", re.I)
EMBEDDED_NAMES = ("smollm", "embedded")


class LedgerClaim(BaseModel):
    source: str  # "claims.json" or "DESCRIPTION.md:<line>"
    text: str
    metric: str
    value: float
    board: str | None
    budget: float | None
    split: str = "dev"
    model: str | None = None
    task: str | None = None
    items: int | None = None
    length: int | None = None


class LedgerEntry(BaseModel):
    claim: LedgerClaim
    status: Literal["reproduced", "contradicted", "unverifiable"]
    reason: str
    measured: float | None = None
    per_seed: list[float] = []
    tolerance: float | None = None
    reproducible: bool = False


def from_claims_json(claims: list[Claim], board: str | None) -> list[LedgerClaim]:
    out = []
    for c in claims:
        metric = "normalized_accuracy" if c.metric in ("accuracy", "normalised_accuracy") else c.metric
        out.append(LedgerClaim(source="claims.json", text=c.model_dump_json(exclude_none=True), metric=metric,
                               value=c.value, board=c.board or board, budget=c.budget, split=c.split or "dev",
                               model=c.model, task=c.task, items=c.items, length=c.length))
    return out


def _metric_spans(sentence: str) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []
    for pat, metric in _METRIC_WORDS:
        for m in pat.finditer(sentence):
            if not any(a <= m.start() < b for a, b, _ in spans):
                spans.append((m.start(), m.end(), metric))
    return sorted(spans)


def from_description(text: str, board: str | None) -> list[LedgerClaim]:
    """One claim per metric mention with a value (right after it, or right before: "95 % accuracy") and a budget."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for sentence in re.split(r"(?<=[.;])\s+", line):
            budget_m = _BUDGET.search(sentence)
            spans = _metric_spans(sentence)
            if budget_m is None or not spans:
                continue
            pct, pct2, tokens = budget_m.groups()
            budget = float(pct or pct2) / 100 if (pct or pct2) else float(tokens)
            numbers = [v for v in _NUMBER.finditer(sentence)
                       if not budget_m.start() <= v.start() < budget_m.end() and not re.match(r"\d+\s+(?:items|tokens|seeds)", sentence[v.start():])]
            b = _BOARD.search(sentence)
            model = _MODEL.search(sentence)
            for k, (start, end, metric) in enumerate(spans):
                nxt = spans[k + 1][0] if k + 1 < len(spans) else len(sentence)
                after = [v for v in numbers if end <= v.start() < nxt and v.start() - end <= 25]
                before = [v for v in numbers if v.end() <= start and start - v.end() <= 3]
                value_m = after[0] if after else (before[-1] if before else None)
                if value_m is None:
                    continue
                value = float(value_m.group(1)) / (100 if value_m.group(2) else 1)
                out.append(LedgerClaim(source=f"DESCRIPTION.md:{n}", text=sentence.strip(), metric=metric, value=value,
                                       board=b.group(1) if b else board, budget=budget,
                                       split="test" if re.search(r"\btest\s+split\b", sentence, re.I) else "dev",
                                       model=model.group(1) if model else None))
    return out


def unverifiable(c: LedgerClaim, boards: set[str]) -> str | None:
    if c.split == "test":
        return "the test split is the arena's: it is never re-run for an agent"
    if c.board is None or c.board not in boards:
        return f"no such board {c.board!r}" if c.board else "the claim names no board and the bundle declares none"
    if c.metric not in METRICS:
        return f"unknown metric {c.metric!r} (known: {', '.join(sorted(set(METRICS)))})"
    if c.budget is None:
        return "the claim names no budget"
    if c.model and not any(e in c.model.lower() for e in EMBEDDED_NAMES):
        return f"model {c.model} is not available here (the embedded SmolLM2-135M is)"
    return None


def tolerance(metric: str, per_seed: list[float], items: int) -> float:
    spread = 2 * pstdev(per_seed) if len(per_seed) > 1 else 0.0
    floor = {"normalized_accuracy": 1 / max(1, items), "top1": 1 / max(1, items), "eviction_cost": 0.02,
             "kl": max(0.02, 0.1 * abs(fmean(per_seed)))}[metric]
    return round(max(spread, floor), 4)


def decide(c: LedgerClaim, per_seed: list[float], items: int) -> LedgerEntry:
    mean = fmean(per_seed)
    tol = tolerance(c.metric, per_seed, items)
    if abs(c.value - mean) <= tol:
        return LedgerEntry(claim=c, status="reproduced", measured=round(mean, 4), per_seed=per_seed, tolerance=tol,
                           reason=f"measured {mean:.3f} (seeds {', '.join(f'{v:.3f}' for v in per_seed)}); claimed "
                                  f"{c.value:g} is within ±{tol:.3f}")
    side = [v - c.value for v in per_seed]
    reproducible = all(abs(d) > tol for d in side) and (all(d > 0 for d in side) or all(d < 0 for d in side))
    return LedgerEntry(claim=c, status="contradicted", measured=round(mean, 4), per_seed=per_seed, tolerance=tol,
                       reproducible=reproducible,
                       reason=f"measured {mean:.3f} (seeds {', '.join(f'{v:.3f}' for v in per_seed)}); claimed {c.value:g} "
                              f"is outside ±{tol:.3f} (2 x seed std, floor {'one item' if c.metric in ('normalized_accuracy', 'top1') else 'fixed'})"
                              + ("; every seed disagrees the same way" if reproducible else "; not every seed disagrees"))


def decide_outcomes(c: LedgerClaim, outcomes: list[float | str], items: int) -> LedgerEntry:
    """``outcomes``: per re-run, the measured value or the error that stopped the method at the claimed setting."""
    errors = [o for o in outcomes if isinstance(o, str)]
    values = [float(o) for o in outcomes if not isinstance(o, str)]
    if not errors:
        return decide(c, values, items)
    what = f"the method failed at the claimed setting (budget {c.budget:g}" + (f", task {c.task}" if c.task else "") + \
        f", board {c.board}): {errors[0]}"
    if not values:
        return LedgerEntry(claim=c, status="contradicted", reproducible=True,
                           reason=f"{what}; none of the {len(outcomes)} re-run{'s' if len(outcomes) != 1 else ''} "
                                  f"produced the claimed {METRICS.get(c.metric, c.metric)} (the harness stops a "
                                  "failed method)")
    mean = fmean(values)
    return LedgerEntry(claim=c, status="contradicted", measured=round(mean, 4), per_seed=values,
                       reason=f"{what} in {len(errors)} of {len(outcomes)} re-runs; the others measured {mean:.3f} "
                              "(not every re-run failed: not a proof)")


def per_seed_outcomes(result: Result, method: str | None, c: LedgerClaim) -> list[float | str] | None:
    """Per seed of the run, the claimed metric or the error that stopped the method at the claim's budget (and
    task). None when a seed has rows that ran but no value for the metric: nothing to decide on."""
    seeds = range(max(1, result.config.seeds))
    load_error = "; ".join(f"{k}: {v}" for k, v in result.method_errors.items()) or "the method did not run"
    if method is None:  # it never loaded: every re-run failed
        return [load_error for _ in seeds]
    out: list[float | str] = []
    for s in seeds:
        rows = [r for r in result.rows if r.method == method and r.seed == s and _matches(r, c)]
        failed = next((r.error for r in rows if r.error), None)
        if failed or not rows:  # an error at this budget on any item: the setting was not reproduced
            out.append(failed or result.method_errors.get(method) or "no rows at the claimed budget")
            continue
        value = _seed_value(result, method, c, s)
        if value is None:
            return None
        out.append(value)
    return out


def failed_elsewhere(result: Result, method: str | None, c: LedgerClaim) -> bool:
    """The claim's rows hold errors, but the method's first error was at another budget or task: the harness
    stops a failed method, so these rows say nothing about the claimed setting (a run of it alone does)."""
    if method is None:
        return False
    first = next((r for r in result.rows if r.method == method and r.error), None)
    return first is not None and not _matches(first, c) and \
        any(r.error for r in result.rows if r.method == method and _matches(r, c))


def _seed_value(result: Result, method: str, c: LedgerClaim, seed: int) -> float | None:
    from harness.evaluate import aggregate

    for a in aggregate([r for r in result.rows if r.seed == seed], result.config.board):
        if a.method == method and c.budget is not None and abs(a.budget - c.budget) < 1e-9 and a.task == (c.task or "*"):
            v = getattr(a, c.metric, None)
            return None if v is None else float(v)
    return None


def _matches(r: Row, c: LedgerClaim) -> bool:
    return c.budget is not None and abs(r.budget - c.budget) < 1e-9 and (c.task is None or r.task == c.task)


def per_seed_values(result: Result, method: str, c: LedgerClaim) -> list[float]:
    """The claimed metric per seed, from a harness result (aggregated per seed with the harness's rules)."""
    from harness.evaluate import aggregate

    seeds = sorted({r.seed for r in result.rows})
    task = c.task or "*"
    vals = []
    for s in seeds:
        rows = [r for r in result.rows if r.seed == s]
        for a in aggregate(rows, result.config.board):
            if a.method == method and c.budget is not None and abs(a.budget - c.budget) < 1e-9 and a.task == task:
                v = getattr(a, c.metric, None)
                if v is not None:
                    vals.append(float(v))
    return vals
