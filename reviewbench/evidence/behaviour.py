"""Nearest methods by behaviour: the candidate, every baseline in each configuration of its hyper-parameter
family, and every earlier submission, compared by the tokens they keep (Jaccard), and the order in which tokens
enter as the budget grows (rank correlation), per view and head. A baseline's match is its best-matching family
member, named.

Two sources. First, where the method is scored: the board benchmark's own calls on the hidden test split
(``harness.keptsets``: its kept sets and every family member's on the same full-cache calls, at the board's
budgets), so a method cannot behave one way for the review and another for the score. Second, the frozen bank
of layer tensors (``harness.fingerprint``; untrusted code in its own sandbox), which also holds the probes, and
which is the only source where no benchmark recorded anything (board C, calibration). Both are reported; a
method whose likeness to a reference differs between them is reported (``BehaviourDivergence``), and one that is
a reference where scored but not on the bank evades the review (``reviewbench.flags.evasion``).

Methods whose choice does not follow the layer's content are recognised by the worker's probes: a method that
is non-deterministic, content-independent or thrown off completely by a 1e-4 perturbation, and whose kept
positions are spread like a uniform random sample (Kolmogorov-Smirnov distance and gap spread), is uniform
random eviction, whatever its RNG or seed. Two draws of it share only chance-level tokens, so it is compared by
its keep probability (each token kept with probability budget / tokens): the weighted Jaccard
sum(min(p, q)) / sum(max(p, q)), which for fixed sets is the ordinary Jaccard. A pure position rule (a
StreamingLLM port) is deterministic and compared by its sets like any other method.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from harness.fingerprint_grid import all_reference_specs, label_of, reference_families

DETERMINISTIC_MIN = 0.999  # repeat probe: the same views twice keep the same tokens
CONTENT_INDEPENDENT_MIN = 0.99  # permuted probe: the same tokens kept whatever the content at each position
HASHLIKE_MAX = 0.5  # perturbed probe: a 1e-4 nudge changes most of the choice (a real score moves a few ties)
UNIFORM_KS_MAX = 1.36  # median sqrt(k) x KS distance of kept positions from uniform (5 % critical value)
UNIFORM_GAP_CV = (0.5, 1.5)  # median coefficient of variation of the gaps between kept positions (random: ~1)


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BehaviourMatch(_Closed):
    reference: str  # "baseline:snapkv" or "submission:agent2-003"
    member: str = ""  # the family member that matched best: "snapkv?query_window=64&kernel=5&pooling=avg"
    jaccard: float  # mean over budgets, views and heads (weighted by keep probability when a side is random)
    rank_corr: float  # Spearman of the keep-levels (the smallest budget at which each token is kept)
    jaccard_by_budget: list[float] = []  # in the order of BehaviourEvidence.budgets
    basis: Literal["kept sets", "keep probability"] = "kept sets"
    members_compared: int = 1
    # where it was measured: the benchmark's scored calls, or the bank (inputs a method can tell apart from the
    # ones it is scored on: bank behaviour may add evidence, never clear what the code shows)
    source: Literal["benchmark", "bank"] = "bank"


class BehaviourProbes(_Closed):
    """What the probes say about how the candidate chooses (Jaccard of its kept sets, probe run vs first run)."""

    repeat_jaccard: float | None  # the same views again
    permuted_jaccard: float | None  # the tokens' content shuffled, positions kept
    perturbed_jaccard: float | None  # every tensor x (1 + 1e-4 noise)
    deterministic: bool | None
    content_independent: bool | None
    position_ks: float  # median sqrt(k) x Kolmogorov-Smirnov distance of the kept positions from uniform
    gap_cv: float  # median coefficient of variation of the gaps between kept positions
    uniform_random: bool  # compared by keep probability, not by its sets
    overspend: float | None = None  # the largest share of a view's budget it kept (over 1: measured, not refused)
    layer_overspend: float | None = None  # its layer_budgets' largest sum over the total
    summary: str
    error: str | None = None


class ScoredKept(_Closed):
    """Where the benchmark stored the kept sets of its scored calls (``harness.keptsets``): the method's and the
    baselines' on the same calls, with content hashes."""

    file: str
    sha256: str
    baselines: str
    baselines_sha256: str


class BehaviourDivergence(_Closed):
    """How differently the method behaves on the bank than where it is scored, seen through the references: its
    Jaccard to each on either source (a method's likeness to a baseline is a property of the two rules; it moves
    little with the inputs, unless the method tells the inputs apart)."""

    reference: str  # the reference whose likeness moved most
    benchmark_jaccard: float
    bank_jaccard: float
    gap: float  # benchmark - bank (signed)
    largest: float  # the largest |gap| over all references compared on both
    evasion: bool  # the benchmark shows it the same as a reference (behaviour_same) that the bank shows it is not
    # (below behaviour_related): on the inputs the review probes it hides what it is where it is scored
    explained_by: str = ""  # a reference the method is like on both sources, which the flipped one sits next to
    # where scored: the references moved, not the method (no evasion)
    summary: str


class HeadRoles(_Closed):
    """Whether the method splits a layer's heads into roles: some keep a pure position set (a few opening tokens and
    an unbroken run of the newest) at every budget, the others a set chosen by content. Measured on kept sets, so no
    idiom of the code hides it (DuoAttention's and RazorAttention's streaming and retrieval heads, and their ports)."""

    source: Literal["benchmark", "bank"]
    views: int  # views (prompt or item x layer) with at least two heads whose choice is not the whole layer
    split_share: float  # of those, the share where some heads are streaming at every budget and others never are
    streaming_heads: float  # the mean share of a view's heads that are streaming at every budget
    summary: str


class Allocation(_Closed):
    """How the method shares its budget out, read off its kept sets: whether the heads of a call keep different
    numbers of tokens, and whether the layers of one prompt do. Measured, so a description that says budgets vary
    across heads or layers can be checked against what the method keeps in any idiom (``flags.misstated``)."""

    source: Literal["benchmark", "bank"]
    head_views: int  # (budget, view) calls with two heads or more, not every head keeping every token
    head_uneven: int  # of those, calls whose heads keep different numbers of tokens
    layer_groups: int  # (budget, prompt) groups with two layers or more, not every layer keeping every token
    layer_uneven: int  # of those, groups whose layers keep different numbers of tokens
    summary: str


class BehaviourEvidence(_Closed):
    matches: list[BehaviourMatch]  # from ``source``: the benchmark's scored calls when measured, else the bank
    errors: dict[str, str]
    budgets: list[float]  # the budgets of ``matches`` (the board's on the benchmark, the bank's otherwise)
    bank_version: int
    probes: BehaviourProbes | None = None
    bank: str = ""  # what the bank holds, in words
    source: Literal["benchmark", "bank"] = "bank"
    where: str = ""  # what the source holds, in words
    bank_matches: list[BehaviourMatch] = []  # the second source (when the benchmark is the first)
    bank_budgets: list[float] = []
    divergence: BehaviourDivergence | None = None
    head_roles: list[HeadRoles] = []  # per source measured (the scored calls first)
    allocation: list[Allocation] = []  # per source measured (the scored calls first)


# --- the measures ------------------------------------------------------------------------------------------------
def _avg_ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="mergesort")
    sx = x[order]
    ranks = np.empty(len(x))
    starts = np.flatnonzero(np.r_[True, sx[1:] != sx[:-1]])
    ends = np.r_[starts[1:], len(x)]
    for s, e in zip(starts, ends):
        ranks[order[s:e]] = (s + e - 1) / 2
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = _avg_ranks(a), _avg_ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


class Behaviour:
    """One method's kept sets on the bank as boolean masks, (budget, view) -> (heads, tokens), and its probes."""

    def __init__(self, kept: dict[str, dict[str, list[list[int]]]], views: dict[str, dict[str, Any]],
                 budgets: list[float], probes: dict[str, Any] | None = None) -> None:
        self.budgets = budgets
        self.views = sorted(views)
        self.masks: dict[tuple[str, str], np.ndarray] = {}
        for b in budgets:
            for v in self.views:
                heads = kept[f"{b:g}"][v]
                m = np.zeros((len(heads), int(views[v]["n_tokens"])), dtype=bool)
                for h, idx in enumerate(heads):
                    m[h, idx] = True
                self.masks[(f"{b:g}", v)] = m
        self.probes = _probes(self, probes or {})

    @classmethod
    def from_masks(cls, masks: dict[tuple[str, str], np.ndarray], budgets: list[float],
                   probes: dict[str, Any] | None = None) -> "Behaviour":
        """From (budget label, view) -> (heads, tokens) booleans (the benchmark's recorded sets)."""
        self = cls.__new__(cls)
        self.budgets = budgets
        self.views = sorted({v for _, v in masks})
        self.masks = masks
        self.probes = _probes(self, probes or {})
        return self

    @property
    def law(self) -> bool:
        return self.probes.uniform_random

    def levels(self, view: str) -> np.ndarray:
        """(heads, tokens): the index of the smallest budget keeping each token (len(budgets) when none does)."""
        first = self.masks[(f"{self.budgets[0]:g}", view)]
        out = np.full(first.shape, len(self.budgets), dtype=float)
        for i, b in reversed(list(enumerate(self.budgets))):
            out[self.masks[(f"{b:g}", view)]] = i
        return out


def _position_stats(b: Behaviour) -> tuple[float, float]:
    """Median over (budget, view, head) of sqrt(k) x KS distance from uniform, and of the gaps' CV."""
    ks, cv = [], []
    for m in b.masks.values():
        n = m.shape[1]
        for row in m:
            x = np.flatnonzero(row)
            k = len(x)
            if k < 8 or k > n - 8:
                continue
            u = (x + 0.5) / n
            i = np.arange(1, k + 1)
            ks.append(np.sqrt(k) * max(float((i / k - u).max()), float((u - (i - 1) / k).max())))
            gaps = np.diff(x)
            cv.append(float(gaps.std() / gaps.mean()))
    return (float(np.median(ks)) if ks else float("inf")), (float(np.median(cv)) if cv else 0.0)


def _probes(b: Behaviour, raw: dict[str, Any]) -> BehaviourProbes:
    rep, perm, pert = raw.get("repeat"), raw.get("permuted"), raw.get("perturbed")
    det = None if rep is None else rep >= DETERMINISTIC_MIN
    indep = None if perm is None else perm >= CONTENT_INDEPENDENT_MIN
    hashlike = pert is not None and pert <= HASHLIKE_MAX
    ks, cv = _position_stats(b)
    uniform = ks <= UNIFORM_KS_MAX and UNIFORM_GAP_CV[0] <= cv <= UNIFORM_GAP_CV[1]
    law = uniform and (det is False or indep is True or hashlike)
    how = ("non-deterministic" if det is False else "content-independent" if indep else
           "changed by a 1e-4 perturbation" if hashlike else "")
    if law:
        summary = f"uniform random over positions ({how}): compared by keep probability"
    elif indep:
        summary = ("content-independent, deterministic: a position rule" if det is not False else
                   "content-independent but non-deterministic, not uniform over positions")
    elif det is False:
        summary = "non-deterministic, depends on the content"
    elif det is None or indep is None:
        summary = "probes incomplete"
    else:
        summary = "deterministic, follows the content"
    over, layer_over = raw.get("overspend"), raw.get("layer_overspend")
    worst = max(over or 1.0, layer_over or 1.0)
    if worst > 1.0:
        summary += f"; spends up to {worst - 1:.1%} over its budget (measured here, refused by the benchmark)"
    return BehaviourProbes(repeat_jaccard=rep, permuted_jaccard=perm, perturbed_jaccard=pert, deterministic=det,
                           content_independent=indep, position_ks=round(ks, 3), gap_cv=round(cv, 3),
                           uniform_random=law, overspend=over, layer_overspend=layer_over, summary=summary,
                           error=raw.get("error"))


def _streaming_row(kept: np.ndarray, n: int) -> bool | None:
    """A head's kept set (sorted indices) is a position rule's: the first s tokens and an unbroken run of the newest
    (s may be 0). None where the set says nothing (too few kept, or nearly all)."""
    k = len(kept)
    if k < 4 or k > n - 8:
        return None
    s = int(np.argmin(kept == np.arange(k))) if not (kept == np.arange(k)).all() else k
    if s == k:
        return False  # only the opening tokens: no run of the newest
    tail = kept[s:]
    return bool(tail[-1] == n - 1 and tail[-1] - tail[0] == len(tail) - 1)


def head_roles(b: Behaviour, source: Literal["benchmark", "bank"]) -> HeadRoles:
    """``HeadRoles`` of one behaviour: per view, each head streaming at every budget where its set says something,
    or at none; a view is split when it holds heads of both kinds."""
    per_view: dict[str, list[list[bool]]] = {}
    for (_, view), m in b.masks.items():
        rows = per_view.setdefault(view, [[] for _ in range(m.shape[0])])
        for h, row in enumerate(m):
            r = _streaming_row(np.flatnonzero(row), m.shape[1])
            if r is not None and h < len(rows):
                rows[h].append(r)
    split, shares = [], []
    for rows in per_view.values():
        said = [r for r in rows if r]
        if len(said) < 2:
            continue
        always = [all(r) for r in said]
        split.append(any(always) and any(not any(r) for r in said))
        shares.append(float(np.mean(always)))
    share = float(np.mean(split)) if split else 0.0
    streaming = float(np.mean(shares)) if shares else 0.0
    summary = (f"{share:.0%} of {len(split)} views split their heads into streaming heads (the opening tokens and "
               f"the newest run at every budget) and heads that choose by content; {streaming:.0%} of a view's heads "
               f"stream on average")
    return HeadRoles(source=source, views=len(split), split_share=round(share, 3), streaming_heads=round(streaming, 3),
                     summary=summary)


def _prompt_layer(view: str) -> tuple[str, str]:
    """A view's prompt (or hidden item) and layer: the bank names views "p0/L13", the scored calls "item|layer"."""
    head, sep, tail = view.rpartition("|")
    if not sep:
        head, sep, tail = view.rpartition("/")
    return head, tail


def allocation(b: Behaviour, source: Literal["benchmark", "bank"]) -> Allocation:
    """``Allocation`` of one behaviour: per (budget, view), whether its heads keep different numbers of tokens;
    per (budget, prompt), whether its layers do. A call where every head keeps every token says nothing."""
    head_views = head_uneven = 0
    per_prompt: dict[tuple[str, str], list[tuple[int, bool]]] = {}
    for (budget, view), m in b.masks.items():
        counts = m.sum(axis=1)
        partial = int(counts.min()) < int(m.shape[1])
        if len(counts) >= 2 and partial:
            head_views += 1
            head_uneven += int(counts.min() != counts.max())
        prompt, _ = _prompt_layer(view)
        per_prompt.setdefault((budget, prompt), []).append((int(counts.sum()), partial))
    groups = [[n for n, _ in c] for c in per_prompt.values() if len(c) >= 2 and any(p for _, p in c)]
    layer_uneven = sum(1 for c in groups if min(c) != max(c))
    summary = (f"heads keep different numbers of tokens in {head_uneven} of {head_views} calls; layers keep "
               f"different numbers in {layer_uneven} of {len(groups)} (budget, prompt) groups")
    return Allocation(source=source, head_views=head_views, head_uneven=head_uneven, layer_groups=len(groups),
                      layer_uneven=layer_uneven, summary=summary)


def _pair_jaccard(a: np.ndarray, b: np.ndarray, a_law: bool, b_law: bool) -> np.ndarray:
    """Per head: Jaccard of the sets, or weighted Jaccard of the keep probabilities when a side is random."""
    if not (a_law or b_law):
        return (a & b).sum(1) / np.maximum(1, (a | b).sum(1))
    n = a.shape[1]
    if a_law and b_law:
        pa, pb = a.sum(1) / n, b.sum(1) / n
        return np.minimum(pa, pb) / np.maximum(1e-12, np.maximum(pa, pb))
    p, s = (a.sum(1) / n, b) if a_law else (b.sum(1) / n, a)
    k = s.sum(1)
    # sum_t min(p, 1[t in S]) / sum_t max(p, 1[t in S]) = p|S| / (|S| + p(n - |S|))
    return p * k / np.maximum(1e-12, k + p * (n - k))


def similarity(cand: Behaviour, ref: Behaviour) -> tuple[float, float, list[float]]:
    """(mean Jaccard, mean rank correlation, Jaccard per budget) over the views and heads both have."""
    per_budget = []
    for b in cand.budgets:
        vals = [_pair_jaccard(cand.masks[(f"{b:g}", v)], ref.masks[(f"{b:g}", v)], cand.law, ref.law)
                for v in cand.views]
        per_budget.append(float(np.mean(np.concatenate(vals))))
    if cand.law or ref.law:  # an independent uniform ranking: no correlation expected, unless both are one
        cor = 1.0 if cand.law and ref.law else 0.0
    else:
        cors = []
        for v in cand.views:
            la, lb = cand.levels(v), ref.levels(v)
            cors += [spearman(x, y) for x, y in zip(la, lb)]
        cor = float(np.mean(cors))
    return float(np.mean(per_budget)), cor, per_budget


def compare_behaviours(cand: Behaviour, references: Mapping[str, Sequence[tuple[str, Behaviour]]]) \
        -> list[BehaviourMatch]:
    """Each label's best member (Jaccard, then rank correlation) against ``cand``, on the views both have."""
    out = []
    for label, members in references.items():
        best: tuple[float, float, list[float], str, Behaviour] | None = None
        for spec, ref in members:
            jac, cor, per = similarity(cand, ref)
            if best is None or (jac, cor) > (best[0], best[1]):
                best = (jac, cor, per, spec, ref)
        if best is None:
            continue
        law = cand.law or best[4].law
        out.append(BehaviourMatch(reference=label, member=best[3] if not label.startswith("submission:") else "",
                                  jaccard=round(best[0], 3), rank_corr=round(best[1], 3),
                                  jaccard_by_budget=[round(x, 3) for x in best[2]],
                                  basis="keep probability" if law else "kept sets", members_compared=len(members)))
    out.sort(key=lambda m: (-m.jaccard, -m.rank_corr, m.reference))
    return out


def compare(result: dict[str, Any], candidate: str, references: Mapping[str, str | Sequence[str]]) \
        -> list[BehaviourMatch]:
    """``references`` maps a label to the specs of its family (or one spec: a submission); each label's best
    member (Jaccard, then rank correlation) is its match. Specs missing from ``result['kept']`` are skipped."""
    budgets = [float(b) for b in result["budgets"]]
    views = result["views"]
    probes = result.get("probes", {})

    seen: dict[str, Behaviour] = {}

    def behaviour(spec: str) -> Behaviour:
        if spec not in seen:
            seen[spec] = Behaviour(result["kept"][spec], views, budgets, probes.get(spec))
        return seen[spec]

    members = {label: [(spec, behaviour(spec)) for spec in ([given] if isinstance(given, str) else given)
                       if spec in result["kept"]] for label, given in references.items()}
    return compare_behaviours(behaviour(candidate), members)


def candidate_probes(result: dict[str, Any], candidate: str) -> BehaviourProbes | None:
    if candidate not in result["kept"]:
        return None
    return Behaviour(result["kept"][candidate], result["views"], [float(b) for b in result["budgets"]],
                     result.get("probes", {}).get(candidate)).probes


def told_apart(m: BehaviourMatch, matches: Sequence[BehaviourMatch], margin: float, identical: float) -> bool:
    """Whether behaviour can name ``m``'s reference. A published rule's reference (``priorart:``) is named only where
    the candidate is nearer to it than to every other reference by ``margin``, or keeps its tokens outright
    (``identical``): many published rules lie close together (window attention summed, normalised, maxed, weighted
    by values; CAKE's keeps nearly SnapKV's tokens), and a variant between two of them is neither. The board
    baselines' families and earlier submissions keep their own bars."""
    if not m.reference.startswith("priorart:") or m.jaccard >= identical:
        return True
    return all(m.jaccard - o.jaccard >= margin for o in matches
               if o.reference != m.reference and not o.reference.startswith("submission:"))


# --- running and caching -----------------------------------------------------------------------------------------
def _spec_key(spec: str, code: str) -> str:
    """A cached result's key: bank version, protocol, budgets, a reference's settings and the code hash (a folder
    or file: its method.py's bytes, wherever it lies; a reference: its class hierarchy's and the interface's
    sources)."""
    from harness.fingerprint import BANK_VERSION, BUDGETS, PROTOCOL, is_configured_reference

    what = f"reference|{spec}|{code}" if is_configured_reference(spec) else f"file|{code}"
    text = f"bank-v{BANK_VERSION}|protocol-v{PROTOCOL}|budgets{','.join(map(str, BUDGETS))}|{what}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def all_members() -> list[str]:
    """Every configured reference: each baseline's family, and the published rules beyond them."""
    return all_reference_specs()


def bank_words() -> str:
    from harness.fingerprint import LAYERS, PROMPTS

    a = sum(p.board == "A" for p in PROMPTS)
    return (f"{len(PROMPTS)} prompts ({a} query-aware, {len(PROMPTS) - a} context-only) of "
            f"{min(p.length for p in PROMPTS)}-{max(p.length for p in PROMPTS)} tokens x {len(LAYERS)} layers "
            f"of the embedded model")


@contextmanager
def _exclusive(lock: Path) -> Iterator[None]:
    """One process at a time builds the bank and fills the cache: reviews that start together (two boards side
    by side, several arena runs over one cache) would otherwise each compute every baseline's fingerprints (minutes
    on a cold cache); the one that waited then reads what the other wrote."""
    import fcntl

    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def fingerprints(specs: list[str], use_cache: bool = True, wall_s: float = 7200) -> dict[str, Any]:
    """Kept sets and probes of ``specs`` on the bank (built first if needed), from the cache when there, else from
    one run of the trusted worker (which runs references itself and each folder in its own sandbox); every new
    result is cached by (bank version, spec, code hash). Returns the worker's result shape."""
    from harness.fingerprint import bank_dir

    with _exclusive(bank_dir().parent / ".fingerprints.lock"):
        return _fingerprints(specs, use_cache, wall_s)


def lanes(todo: list[str], cores: int | None = None) -> list[list[str]]:
    """``todo`` dealt round-robin over the cores (at most 4 lanes): every spec is run on its own against the same
    bank, so the lanes' results are the one run's. A cold cache holds ~60 baseline specs: minutes on one core."""
    n = max(1, min(len(todo), cores if cores is not None else (os.cpu_count() or 1), 4))
    return [todo[i::n] for i in range(n)]


def _run_lanes(run: Callable[[list[str], int | None], dict[str, Any]], todo: list[str],
               cores: int | None = None) -> dict[str, Any]:
    """One trusted worker per lane (a torch thread each), side by side; their results merged."""
    parts = lanes(todo, cores)
    if len(parts) == 1:
        return run(parts[0], None)
    with ThreadPoolExecutor(len(parts)) as pool:
        results = list(pool.map(lambda methods: run(methods, 1), parts))
    versions = {int(r["bank_version"]) for r in results}
    if len(versions) != 1:
        raise RuntimeError(f"fingerprint workers ran on different banks: versions {sorted(versions)}")
    merged: dict[str, Any] = {"bank_version": versions.pop(), "views": results[0]["views"], "errors": {},
                              "kept": {}, "probes": {}, "code_hashes": {}}
    for r in results:
        for key in ("errors", "kept", "probes", "code_hashes"):
            merged[key].update(r.get(key, {}))
    return merged


def _fingerprints(specs: list[str], use_cache: bool, wall_s: float) -> dict[str, Any]:
    import orjson

    from harness.fingerprint import BANK_VERSION, BUDGETS, build_bank, spec_code_hash
    from harness.io import write_json_atomic
    from harness.sandbox import run_worker

    bank = build_bank()
    cache = bank.parent / "kept"
    codes = {s: spec_code_hash(s) for s in specs}
    keys = {s: _spec_key(s, codes[s]) for s in specs}
    kept: dict[str, Any] = {}
    probes: dict[str, Any] = {}
    views: dict[str, Any] | None = None
    for spec, key in keys.items():
        f = cache / f"{key}.json"
        if use_cache and f.is_file():
            data = orjson.loads(f.read_bytes())  # ~200 files of ~600 KB each review: orjson halves the parse
            kept[spec], probes[spec], views = data["kept"], data["probes"], data["views"]
    todo = [s for s in specs if s not in kept]
    errors: dict[str, str] = {}
    version = BANK_VERSION
    if todo:
        result = _run_lanes(lambda methods, threads: run_worker(
            {"methods": methods, "bank": str(bank), "budgets": list(BUDGETS)}, module="harness.fingerprint",
            wall_s=wall_s, threads=threads), todo)
        errors = {str(k): str(v) for k, v in result.get("errors", {}).items()}
        version = int(result["bank_version"])
        views = result["views"]
        for spec, value in result["kept"].items():
            kept[spec], probes[spec] = value, result["probes"][spec]
            if result.get("code_hashes", {}).get(spec) == codes[spec]:  # not cached if the code changed meanwhile
                write_json_atomic(cache / f"{keys[spec]}.json", {"kept": value, "probes": probes[spec],
                                                                  "views": views})
    return {"bank_version": version, "budgets": list(BUDGETS), "views": views or {}, "kept": kept, "probes": probes,
            "errors": errors}


def _scored_behaviours(kept: ScoredKept, bank: dict[str, Any], cand: str, earlier: dict[str, str],
                       errors: dict[str, str]) \
        -> tuple[Behaviour, dict[str, list[tuple[str, Behaviour]]], list[float]] | None:
    """The candidate and every reference on the benchmark's scored calls (the views the candidate has: item x
    attention layer, at the board's budgets). A reference lacking any of them is left out and said. The probes
    (is it random?) are the bank's, the positions' spread the benchmark's own."""
    from harness.keptsets import KeptSets, load_baselines, load_kept
    from harness.loading import code_hash

    mine = load_kept(Path(kept.file))
    views = sorted({(item, layer) for item, _, layer in mine.masks})
    # the budgets it answered on every recorded call (a method that failed at one is compared on the others)
    budgets = [b for b in mine.budgets if all((item, f"{b:g}", layer) in mine.masks for item, layer in views)]
    if not budgets:
        return None
    labels = [f"{b:g}" for b in budgets]
    probes = bank.get("probes", {})

    def behaviour(ks: KeptSets, spec: str) -> Behaviour | None:
        try:
            masks = {(b, f"{item}|{layer}"): ks.masks[(item, b, layer)] for b in labels for item, layer in views}
        except KeyError:
            return None
        if any(masks[(b, f"{item}|{layer}")].shape != mine.masks[(item, b, layer)].shape
               for b in labels for item, layer in views):
            return None  # another prompt length: not the same calls
        return Behaviour.from_masks(masks, budgets, probes.get(spec))

    me = behaviour(mine, cand)
    assert me is not None
    refs: dict[str, list[tuple[str, Behaviour]]] = {}
    for spec, ks in load_baselines(Path(kept.baselines)).items():
        b = behaviour(ks, spec)
        if b is None:
            errors.setdefault(f"benchmark:{spec}", "not recorded on every scored call (its schedule was refused)")
            continue
        refs.setdefault(label_of(spec), []).append((spec, b))
    folder = Path(kept.file).parent
    for label, path in earlier.items():
        f = folder / f"{code_hash(path)}.npz"
        if f.is_file() and f != Path(kept.file):
            b = behaviour(load_kept(f), path)
            if b is not None:
                refs[label] = [(path, b)]
    return me, refs, budgets


def divergence(scored: list[BehaviourMatch], bank: list[BehaviourMatch], same: float = 0.9,
               related: float = 0.75, bank_name: str = "the bank") -> BehaviourDivergence | None:
    """The references' likeness on the benchmark against the bank; an evasion when the benchmark shows the method
    the same as a reference (``same``) that the bank shows it is not (below ``related``), and no other reference
    explains it. Two references can coincide on some inputs and part on others (on one needle item a repeat-pass
    score and a recency window keep nearly the same tokens): a method that is like a second reference on both
    sources (``same`` where scored, ``related`` on the bank) lies next to the first where scored because the two
    references do (Jaccard distance is a metric), not because it told the inputs apart."""
    on_bank = {m.reference: m.jaccard for m in bank}
    pairs = [(m.reference, m.jaccard, on_bank[m.reference]) for m in scored if m.reference in on_bank]
    if not pairs:
        return None
    # only a fixed rule explains (a baseline or a published rule): an earlier submission of the same agent may hide
    # the same way on the bank, and being like it on both sources would then explain its own evasion away
    steady = [p for p in pairs if p[1] >= same and p[2] >= related and not p[0].startswith("submission:")]
    flips = [p for p in pairs if p[1] >= same and p[2] < related]
    evading = [] if steady else flips
    shown = evading or flips
    ref, jb, jk = max(shown or pairs, key=lambda p: (p[1] - p[2], p[1]) if shown else (abs(p[1] - p[2]), p[1]))
    largest = max(abs(a - b) for _, a, b in pairs)
    summary = (f"{ref}: Jaccard {jb:.2f} where it is scored, {jk:.2f} on {bank_name}; the largest gap over "
               f"{len(pairs)} references is {largest:.2f}")
    explained_by = ""
    if evading:
        summary += (f" — it keeps {ref}'s tokens where it is scored (at or above {same:g}) but not on {bank_name} "
                    f"(below {related:g}): it behaves differently when it can tell it is being reviewed")
    elif flips:
        other, ob, ok = max(steady, key=lambda p: (p[2], p[1]))
        explained_by = other
        summary += (f" — explained: it is like {other} on both sources ({ob:.2f} where it is scored, {ok:.2f} on "
                    f"{bank_name}), and {ref} keeps nearly {other}'s tokens where it is scored; the method did not "
                    f"tell the inputs apart")
    return BehaviourDivergence(reference=ref, benchmark_jaccard=jb, bank_jaccard=jk, gap=round(jb - jk, 3),
                               largest=round(largest, 3), evasion=bool(evading), explained_by=explained_by,
                               summary=summary)


# the bank's views whose inputs a board hands a method: its question appended (A), the context alone (B: the
# reconstruction pass where asked). A board with no view of its own (C: decode calls) is compared on all of them.
BANK_VIEWS_OF = {"A": "A", "B_offline": "B_offline", "B_online": "B_offline"}


def _board_views(result: dict[str, Any], board: str | None) -> dict[str, Any]:
    """``result`` on the bank's views of ``board``'s kind (``BANK_VIEWS_OF``); unchanged where it has none. A
    method made for one board meets inputs of another kind on the rest of the bank (a question-aware rule with no
    question, a reconstruction-pass rule with only a window): its likeness to a reference moves there for reasons
    of the inputs, not because it told the bank apart."""
    kind = BANK_VIEWS_OF.get(board or "")
    views = {v: d for v, d in (result.get("views") or {}).items() if d.get("board") == kind}
    return {**result, "views": views} if views else result


def behaviour_evidence(candidate_dir: Path, earlier: dict[str, Path], top: int = 5, use_cache: bool = True,
                       scored: ScoredKept | None = None, same: float = 0.9, related: float = 0.75,
                       board: str | None = None) -> BehaviourEvidence:
    """The candidate's nearest baselines (best member of each family) and earlier submissions, with its probes.
    With ``scored`` (the benchmark's recorded sets) the matches are measured on the calls the method is scored on
    and the bank is the second source: both are reported, and how far they diverge. ``use_cache=False`` re-runs
    the candidate and the earlier submissions on the bank (the baselines' cached kept sets depend only on their
    code, which the key holds). ``board``: the divergence reads the bank's views of that board's inputs."""
    from harness.fingerprint import BUDGETS

    cand = str(candidate_dir.resolve())
    earlier_specs = {f"submission:{k}": str(p.resolve()) for k, p in earlier.items()}
    members = all_members()
    result = fingerprints(members, use_cache=True)
    fresh = fingerprints([cand, *earlier_specs.values()], use_cache=use_cache)
    merged = {**result, "kept": {**result["kept"], **fresh["kept"]}, "probes": {**result["probes"], **fresh["probes"]},
              "views": fresh["views"] or result["views"]}
    errors = {**result["errors"], **fresh["errors"]}
    budgets = list(BUDGETS)
    refs = {label: list(specs) for label, specs in reference_families().items()} | {k: [v] for k, v in earlier_specs.items()}
    bank_all = compare(merged, cand, refs) if cand in merged["kept"] else []
    probes = candidate_probes(merged, cand)
    bank_me = Behaviour(merged["kept"][cand], merged["views"], budgets) if cand in merged["kept"] else None
    bank_roles = [head_roles(bank_me, "bank")] if bank_me is not None else []
    bank_alloc = [allocation(bank_me, "bank")] if bank_me is not None else []
    measured = _scored_behaviours(scored, merged, cand, earlier_specs, errors) if scored is not None else None
    if measured is None:
        return BehaviourEvidence(matches=bank_all[:top], errors=errors, budgets=budgets,
                                 bank_version=result["bank_version"], probes=probes, bank=bank_words(),
                                 where=f"the behaviour bank ({bank_words()})", head_roles=bank_roles,
                                 allocation=bank_alloc)
    me, scored_refs, board_budgets = measured
    # the divergence compares like with like: the scored calls with the bank's inputs of the same kind
    like = _board_views(merged, board)
    bank_like = compare(like, cand, refs) if like is not merged else bank_all
    bank_name = f"the review's bank ({board} inputs)" if like is not merged else "the review's bank"
    on_board = compare_behaviours(me, scored_refs)
    n_items = len({v.rpartition("|")[0] for v in me.views})
    n_layers = len({v.rpartition("|")[2] for v in me.views})
    on_board = [m.model_copy(update={"source": "benchmark"}) for m in on_board]
    return BehaviourEvidence(matches=on_board[:top], errors=errors, budgets=board_budgets,
                             bank_version=result["bank_version"], probes=probes, bank=bank_words(), source="benchmark",
                             where=f"the board benchmark's scored calls: {n_items} hidden test items x {n_layers} "
                                   f"layers at the board's budgets",
                             bank_matches=bank_all[:top], bank_budgets=budgets,
                             divergence=divergence(on_board, bank_like, same, related, bank_name),
                             head_roles=[head_roles(me, "benchmark"), *bank_roles],
                             allocation=[allocation(me, "benchmark"), *bank_alloc])
