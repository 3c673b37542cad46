"""Nearest methods by behaviour: the candidate, every baseline and every earlier submission run on the frozen
bank of layer tensors (``harness.fingerprint``, in the sandbox); kept sets compared by Jaccard, and the
order in which tokens enter as the budget grows compared by rank correlation, per layer and head.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import BaseModel

# query-agnostic SnapKV is SnapKV's code fed other queries by board B; on the bank the two are one method
BASELINES = ("snapkv", "pyramidkv", "adakv", "tova", "window", "knorm", "expected_attention", "kvzip",
             "h2o", "rkv", "random")


class BehaviourMatch(BaseModel):
    reference: str  # "baseline:snapkv" or "submission:agent2-003"
    jaccard: float  # mean over budgets, prompts, layers and heads
    rank_corr: float  # Spearman of the keep-levels (the smallest budget at which each token is kept)


class BehaviourEvidence(BaseModel):
    matches: list[BehaviourMatch]
    errors: dict[str, str]
    budgets: list[float]
    bank_version: int


def _avg_ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    sx = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sx[j + 1] == sx[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2
        i = j + 1
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = _avg_ranks(a), _avg_ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def keep_levels(kept: dict[str, dict[str, list[list[int]]]], budgets: list[float], view: str, head: int,
                n: int) -> np.ndarray:
    """Per token: the index of the smallest budget that keeps it (len(budgets) when none does)."""
    levels = np.full(n, len(budgets), dtype=float)
    for i, b in reversed(list(enumerate(budgets))):
        idx = kept[f"{b:g}"][view][head]
        levels[[j for j in idx if j < n]] = i
    return levels


def compare(result: dict, candidate: str, references: dict[str, str]) -> list[BehaviourMatch]:
    """``references`` maps a label to the spec the worker ran; both sides must be in ``result['kept']``."""
    budgets = result["budgets"]
    cand = result["kept"][candidate]
    out = []
    for label, spec in references.items():
        ref = result["kept"].get(spec)
        if ref is None:
            continue
        jac, cor = [], []
        for b in budgets:
            for view, heads in cand[f"{b:g}"].items():
                for h, kept in enumerate(heads):
                    a, r = set(kept), set(ref[f"{b:g}"][view][h])
                    jac.append(len(a & r) / max(1, len(a | r)))
        first = f"{budgets[0]:g}"
        for view, heads in cand[first].items():
            n = 1 + max(max((max(x) for x in cand[f"{b:g}"][view] if x), default=0) for b in budgets)
            for h in range(len(heads)):
                cor.append(spearman(keep_levels(cand, budgets, view, h, n), keep_levels(ref, budgets, view, h, n)))
        out.append(BehaviourMatch(reference=label, jaccard=round(float(np.mean(jac)), 3),
                                  rank_corr=round(float(np.mean(cor)), 3)))
    out.sort(key=lambda m: (-m.jaccard, -m.rank_corr, m.reference))
    return out


def _spec_hash(spec: str) -> str:
    """What a run on the bank depends on: the method's code (a reference method: the harness's methods and API)."""
    import hashlib

    from harness.fingerprint import BANK_VERSION

    h = hashlib.sha256(f"bank-v{BANK_VERSION}|budgets{','.join(map(str, _budgets()))}|".encode())
    p = Path(spec)
    if (p / "method.py").is_file():
        h.update((p / "method.py").read_bytes())
    else:
        import harness

        root = Path(harness.__file__).parent
        h.update(spec.encode())
        for f in sorted([*root.glob("methods/*.py"), root / "api.py", root / "fingerprint.py"]):
            h.update(f.read_bytes())
    return h.hexdigest()[:24]


def _budgets() -> list[float]:
    from harness.fingerprint import BUDGETS

    return list(BUDGETS)


def behaviour_evidence(candidate_dir: Path, earlier: dict[str, Path], top: int = 5,
                       use_cache: bool = True) -> BehaviourEvidence:
    """Build the bank if needed (trusted code, the embedded model), then run on it every method whose kept sets
    are not cached yet (cached by code hash). The trusted fingerprint worker runs the baselines itself and each
    other method in a sandboxed process of its own, so no candidate can touch another method's kept sets."""
    import json

    from harness.fingerprint import BANK_VERSION, build_bank
    from harness.io import write_json_atomic
    from harness.sandbox import run_worker

    bank = build_bank()
    cache = bank.parent / "kept"
    cand = str(candidate_dir.resolve())
    specs = [cand, *BASELINES, *(str(p.resolve()) for p in earlier.values())]
    kept: dict[str, dict] = {}
    for spec in specs:
        f = cache / f"{_spec_hash(spec)}.json"
        if use_cache and f.is_file():
            kept[spec] = json.loads(f.read_text())
    todo = [s for s in specs if s not in kept]
    errors: dict[str, str] = {}
    version = BANK_VERSION
    if todo:
        result = run_worker({"methods": todo, "bank": str(bank), "budgets": _budgets()}, module="harness.fingerprint",
                            wall_s=3600)
        errors = {str(k): str(v) for k, v in result.get("errors", {}).items()}
        version = int(result["bank_version"])
        for spec, value in result["kept"].items():
            kept[spec] = value
            write_json_atomic(cache / f"{_spec_hash(spec)}.json", value)
    merged = {"budgets": _budgets(), "kept": kept}
    if cand not in kept:
        return BehaviourEvidence(matches=[], errors=errors, budgets=_budgets(), bank_version=version)
    refs = {f"baseline:{b}": b for b in BASELINES} | {f"submission:{k}": str(p.resolve()) for k, p in earlier.items()}
    return BehaviourEvidence(matches=compare(merged, cand, refs)[:top], errors=errors, budgets=_budgets(),
                             bank_version=version)
