"""Calibration numbers from case results and the answer key. Pure: no I/O.

Rows: each judge, the panel (the final verdict: aggregated scores, standing flags; a source counts as named
when a primary judge named it) and evidence only (no LLM: code similarity, then the behavioural
fingerprint, then prior-art retrieval; flags are the deterministic stages' candidate flags).
A source is *named* when one of the first three prior works a judge lists has an accepted arXiv id or title.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from statistics import fmean

from pydantic import BaseModel, Field

from reviewbench.calibrate.runner import CaseResult, JudgeRecord
from reviewbench.calibrate.suite import BASELINE_CASES, AnswerKey, Case

PANEL, EVIDENCE = "panel", "evidence only"
CODE_CONTAINMENT_MIN = 0.5  # the evidence row trusts a code match above this share of the candidate's fingerprints
BEHAVIOUR_JACCARD_MIN = 0.9  # ... else a behaviour match above this Jaccard, else the top prior-art hit


class Row(BaseModel):
    name: str
    family: str = ""
    n_baselines: int = 0
    novelty_le1: float | None = None  # share of blinded baselines scored novelty <= 1
    source_named: float | None = None  # share of blinded baselines whose source paper was named
    flag_recall: float | None = None  # expected flags raised on the planted cases / expected flags
    flags_expected: int = 0
    flags_hit: int = 0
    false_flags: int = 0  # flags raised that a case neither expects nor allows
    canary_shift: dict[str, float] = Field(default_factory=dict)  # canary minus clean twin, per criterion
    mean_scores: dict[str, float] = Field(default_factory=dict)  # on the blinded baselines
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    seconds: float = 0.0
    errors: int = 0


class Calibration(BaseModel):
    rows: list[Row]
    alpha: dict[str, float | None]  # Krippendorff's alpha (interval) between the two primary judges, per criterion
    family_offsets: dict[str, dict[str, float]]  # family -> criterion -> mean (judge - mean of the primaries)
    confusion: dict[str, dict[str, str]]  # row -> baseline method -> what it named (a baseline, "other" or "none")


def _norm(s: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", s.lower()).split())


def _arxiv(s: str | None) -> str:
    m = re.search(r"(\d{4}\.\d{4,5})", s or "")
    return m.group(1) if m else ""


def names_source(prior_work: Sequence[dict], case: Case) -> bool:
    accept_ids = {_arxiv(a) for a in case.accept_arxiv}
    titles = [_norm(t) for t in case.accept_titles if t]
    for p in prior_work[:3]:
        if _arxiv(p.get("arxiv_id") or p.get("arxiv")) in accept_ids - {""}:
            return True
        title = _norm(p.get("title") or p.get("short_name") or "")
        if title and any(t and (t in title or title == t) for t in titles):
            return True
    return False


def label_of(prior_work: Sequence[dict], key: AnswerKey) -> str:
    """What the first named prior work is, as a baseline name when it is one of the twelve."""
    if not prior_work:
        return "none"
    first = prior_work[0]
    for c in sorted((c for c in key.cases if c.kind in ("baseline", "port")), key=lambda c: BASELINE_CASES.index(c.method)):
        if names_source([first], c.model_copy(update={"accept_arxiv": [c.arxiv] if c.arxiv else []})):
            return c.method
    return "other"


def evidence_source(ev) -> list[dict]:
    """The evidence row's named source, as a one-item prior-work list (empty when nothing qualifies)."""
    from reviewbench.priorart import load_index

    papers = load_index().baselines()
    ref = None
    if ev.code and ev.code[0]["containment"] >= CODE_CONTAINMENT_MIN:
        ref = ev.code[0]["reference"]
        if ref.startswith("public:") and ev.code[0].get("implements"):  # a public implementation of a baseline
            ref = f"baseline:{ev.code[0]['implements']}"
    elif ev.behaviour and ev.behaviour[0]["jaccard"] >= BEHAVIOUR_JACCARD_MIN:
        ref = ev.behaviour[0]["reference"]
    if ref and ref.startswith("baseline:") and ref.split(":", 1)[1] in papers:
        p = papers[ref.split(":", 1)[1]]
        return [{"title": p.title, "arxiv_id": p.arxiv, "via": ref}]
    if ev.prior_art:
        h = ev.prior_art[0]
        return [{"title": h.get("title") or h.get("short_name", ""), "arxiv_id": h.get("arxiv"), "via": "prior art"}]
    return []


def krippendorff_interval(units: Sequence[Sequence[float | None]]) -> float | None:
    """Krippendorff's alpha, interval metric, missing values allowed; None when undefined (no variation, or
    fewer than two pairable values). Computed by the ``krippendorff`` package (coders x units, NaN = missing);
    on 200 random panels it agrees with the textbook pairwise formula this replaced to 4 decimals."""
    import krippendorff
    import numpy as np

    coders = max((len(u) for u in units), default=0)
    if coders < 2 or sum(1 for u in units if sum(v is not None for v in u) >= 2) == 0:
        return None
    data = np.full((coders, len(units)), np.nan)
    for j, u in enumerate(units):
        for i, v in enumerate(u):
            if v is not None:
                data[i, j] = v
    try:
        with np.errstate(invalid="ignore", divide="ignore"):
            alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement="interval"))
    except ValueError:  # a single value in the whole domain: no variation to agree on
        return None
    return None if np.isnan(alpha) else round(alpha, 4)


def _primaries(r: CaseResult) -> list[JudgeRecord]:
    return [j for j in r.judges if j.role == "primary"][:2]


def family_offsets(results: Sequence[CaseResult], criteria: Sequence[str]) -> dict[str, dict[str, float]]:
    """Each family's mean distance from the primaries' mean, per criterion, over cases both primaries scored."""
    diffs: dict[str, dict[str, list[float]]] = {}
    for r in results:
        ps = [j for j in _primaries(r) if j.error is None and j.scores]
        if len(ps) < 2:
            continue
        for c in criteria:
            m = fmean(j.scores[c] for j in ps)
            for j in ps:
                diffs.setdefault(j.family, {}).setdefault(c, []).append(j.scores[c] - m)
    return {f: {c: round(fmean(v), 3) for c, v in by.items()} for f, by in diffs.items()}


def _flag_counts(raised: dict[str, list[str]], key: AnswerKey) -> tuple[int, int, int]:
    expected = hit = false = 0
    for code, flags in raised.items():
        case = key.case(code)
        if case is None:
            continue
        if case.kind == "planted":
            expected += len(case.expected_flags)
            hit += len(set(case.expected_flags) & set(flags))
        false += len(set(flags) - set(case.expected_flags) - set(case.allowed_flags))
    return expected, hit, false


def _row_for_judge(jid: str, pairs: list[tuple[Case, JudgeRecord]], canaries: list[tuple[Case, CaseResult,
                   CaseResult]], key: AnswerKey, criteria: Sequence[str]) -> tuple[Row, dict[str, str]]:
    """One judge's row over the cases it ran on, and what it named first for each blinded baseline."""
    row = Row(name=jid, family=pairs[0][1].family if pairs else "")
    scored = [(c, j) for c, j in pairs if c.kind in ("baseline", "port") and j.error is None and j.scores]
    row.n_baselines = len(scored)
    if scored:
        row.novelty_le1 = round(fmean(j.scores.get("novelty", 99) <= 1 for _, j in scored), 3)
        with_src = [(c, j) for c, j in scored if c.has_source]
        row.source_named = round(fmean(names_source(j.prior_work, c) for c, j in with_src), 3) if with_src else None
        row.mean_scores = {k: round(fmean(j.scores[k] for _, j in scored), 3) for k in criteria}
    confusion = {c.method: label_of(j.prior_work, key) for c, j in scored}
    exp, hit, false = _flag_counts({c.code: j.flags for c, j in pairs}, key)
    row.flags_expected, row.flags_hit, row.false_flags = exp, hit, false
    row.flag_recall = round(hit / exp, 3) if exp else None
    for _, canary, twin in canaries:
        a, b = _judge(jid, canary), _judge(jid, twin)
        if a and b and a.scores and b.scores:
            row.canary_shift = {k: round(a.scores[k] - b.scores[k], 3) for k in criteria}
    row.input_tokens = sum(j.input_tokens for _, j in pairs)
    row.output_tokens = sum(j.output_tokens for _, j in pairs)
    costs = [j.cost_usd for _, j in pairs]
    row.cost_usd = None if any(x is None for x in costs) else round(sum(x or 0.0 for x in costs), 6)
    row.seconds = round(sum(j.seconds for _, j in pairs), 2)
    row.errors = sum(j.error is not None for _, j in pairs)
    return row, confusion


def _judge(judge_id: str, r: CaseResult) -> JudgeRecord | None:
    return next((j for j in r.judges if j.judge_id == judge_id), None)


def _panel_row(judge_rows: list[Row], cases: list[tuple[Case, CaseResult]], canaries: list[tuple[Case, CaseResult,
               CaseResult]], key: AnswerKey, criteria: Sequence[str]) -> Row:
    """The final verdicts: aggregated scores and standing flags; a source counts when a primary judge named it."""
    panel = Row(name=PANEL)
    scored = [(c, r) for c, r in cases if c.kind in ("baseline", "port") and r.panel_scores.get("novelty") is not None]
    panel.n_baselines = len(scored)
    if scored:
        panel.novelty_le1 = round(fmean((r.panel_scores["novelty"] or 0.0) <= 1 for _, r in scored), 3)
        with_src = [(c, r) for c, r in scored if c.has_source]
        panel.source_named = round(fmean(any(names_source(j.prior_work, c) for j in _primaries(r))
                                         for c, r in with_src), 3) if with_src else None
        panel.mean_scores = {k: round(fmean(r.panel_scores[k] or 0.0 for _, r in scored), 3) for k in criteria
                             if all(r.panel_scores.get(k) is not None for _, r in scored)}
    exp, hit, false = _flag_counts({c.code: r.panel_flags for c, r in cases}, key)
    panel.flags_expected, panel.flags_hit, panel.false_flags = exp, hit, false
    panel.flag_recall = round(hit / exp, 3) if exp else None
    for _, canary, twin in canaries:
        a, b = canary.panel_scores, twin.panel_scores
        shift = {k: (a.get(k), b.get(k)) for k in criteria}
        if all(x is not None and y is not None for x, y in shift.values()):
            panel.canary_shift = {k: round((x or 0.0) - (y or 0.0), 3) for k, (x, y) in shift.items()}
    for r in judge_rows:
        panel.input_tokens += r.input_tokens
        panel.output_tokens += r.output_tokens
        panel.cost_usd = None if panel.cost_usd is None or r.cost_usd is None else round(panel.cost_usd + r.cost_usd, 6)
    tie_breaks = [j for _, r in cases for j in r.judges if j.role == "tie_break"]
    panel.input_tokens += sum(j.input_tokens for j in tie_breaks)
    panel.output_tokens += sum(j.output_tokens for j in tie_breaks)
    panel.seconds = round(sum(r.seconds for r in judge_rows) + sum(j.seconds for j in tie_breaks), 2)  # judge time
    return panel


def _evidence_row(cases: list[tuple[Case, CaseResult]], key: AnswerKey) -> tuple[Row, dict[str, str]] | None:
    """No LLM: the deterministic stages' named source and candidate flags."""
    with_ev = [(c, r.evidence) for c, r in cases if r.evidence is not None]
    if not with_ev:
        return None
    ev = Row(name=EVIDENCE)
    eb = [(c, e) for c, e in with_ev if c.kind in ("baseline", "port") and e.error is None]
    ev.n_baselines = len(eb)
    named = {c.code: evidence_source(e) for c, e in eb}
    with_src = [c for c, _ in eb if c.has_source]
    ev.source_named = round(fmean(names_source(named[c.code], c) for c in with_src), 3) if with_src else None
    exp, hit, false = _flag_counts({c.code: e.candidate_flags for c, e in with_ev}, key)
    ev.flags_expected, ev.flags_hit, ev.false_flags = exp, hit, false
    ev.flag_recall = round(hit / exp, 3) if exp else None
    return ev, {c.method: label_of(named[c.code], key) for c, _ in eb}


def compute(results: Sequence[CaseResult], key: AnswerKey, criteria: Sequence[str]) -> Calibration:
    by_code = {r.code: r for r in results}
    cases: list[tuple[Case, CaseResult]] = [(c, r) for r in results if (c := key.case(r.code)) is not None]
    canaries = [(c, r, by_code[c.twin]) for c, r in cases
                if c.plant == "injection_canary" and c.twin is not None and c.twin in by_code]
    # counted judges, then the advisors (run and shown beside them: what the small LLMs would have said)
    judge_ids = list(dict.fromkeys([j.judge_id for r in results for j in r.judges if j.role == "primary"]
                                   + [j.judge_id for r in results for j in r.judges if j.role == "advisory"]))
    rows: list[Row] = []
    confusion: dict[str, dict[str, str]] = {}
    for jid in judge_ids:
        pairs = [(c, j) for c, r in cases if (j := _judge(jid, r)) is not None]
        row, confusion[jid] = _row_for_judge(jid, pairs, canaries, key, criteria)
        rows.append(row)
    rows.append(_panel_row(list(rows), cases, canaries, key, criteria))
    evidence = _evidence_row(cases, key)
    if evidence is not None:
        rows.append(evidence[0])
        confusion[EVIDENCE] = evidence[1]
    alpha = {k: krippendorff_interval([[j.scores.get(k) for j in _primaries(r) if j.error is None and j.scores]
                                       for r in results]) for k in criteria}
    return Calibration(rows=rows, alpha=alpha, family_offsets=family_offsets(results, criteria), confusion=confusion)


FAIL_METRICS = {"novelty": "novelty_le1", "source": "source_named", "recall": "flag_recall"}


def parse_fail_under(text: str | None) -> dict[str, float]:
    """``novelty=1.0,source=0.9,recall=1,alpha=0.5`` -> thresholds; raises ValueError with the bad part."""
    out: dict[str, float] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in (*FAIL_METRICS, "alpha"):
            raise ValueError(f"unknown metric {name!r} in --fail-under (known: {', '.join([*FAIL_METRICS, 'alpha'])})")
        try:
            out[name] = float(value)
        except ValueError:
            raise ValueError(f"--fail-under {name}: {value!r} is not a number") from None
    return out


def failures(cal: Calibration, thresholds: dict[str, float]) -> list[str]:
    """Which thresholds the panel misses (an undefined metric misses too: it proves nothing)."""
    panel = next(r for r in cal.rows if r.name == PANEL)
    out = []
    for name, limit in thresholds.items():
        got: float | None
        if name == "alpha":
            vals = [v for v in cal.alpha.values() if v is not None]
            got = None if not vals or len(vals) < len(cal.alpha) else min(vals)
        else:
            got = getattr(panel, FAIL_METRICS[name])
        if got is None or got < limit:
            out.append(f"{name} {('undefined' if got is None else f'{got:g}')} < {limit:g}")
    return out
