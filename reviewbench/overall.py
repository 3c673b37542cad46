"""The Overall score: accuracy + efficiency against the full cache, on the board's hidden test split.

Per answered question at each budget (a harness ``Row``), against the full cache's row on the same question:

- **accuracy**: the task score divided by the full cache's mean score on that task (normalised accuracy); on
  items without a task metric (board C's reasoning-trace fidelity) or where the full cache never scores, the
  top-1 next-token agreement with the full cache instead (said in ``accuracy_basis``);
- **memory**: 1 - peak KV bytes held while answering / the full cache's peak;
- **speed**: 1 - decode cost / the full cache's decode cost, with a stated deterministic cost model: decoding
  is memory-bound, so a token costs the bytes read — the weights plus the KV cache held at that step
  (``param_bytes + mean KV bytes per decoded token``). Wall-clock tokens/s on a shared CPU moves by tens of
  percent between runs; this term does not move at all;
- **overhead**: 1 - the method's CPU seconds / the CPU seconds of the model's own forward passes for that
  answer (prefill + decoding), both read from the kernel, capped at 1 (B_offline's one-off reconstruction
  pass is reported apart, not charged);
- **length** (free generation only): the full cache's generated tokens / the method's, capped at 1.

A row's Overall is the weighted sum; an item's is the mean over its questions and budgets; the board's is the
mean over items. A budget at which the method failed scores 0. Per-item Overall scores are what the CI gate of
the points rules bootstraps. Pure functions: the same rows and weights give the same numbers.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import fmean
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.results import Row

COMPONENTS = ("accuracy", "memory", "speed", "overhead", "length")


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OverallWeights(_Closed):
    """How a board weighs accuracy against efficiency; the weights sum to 1."""

    accuracy: float = Field(default=0.7, ge=0, le=1)
    memory: float = Field(default=0.1, ge=0, le=1)
    speed: float = Field(default=0.1, ge=0, le=1)
    overhead: float = Field(default=0.1, ge=0, le=1)
    length: float = Field(default=0.0, ge=0, le=1)

    @model_validator(mode="after")
    def _sums_to_one(self) -> "OverallWeights":
        total = sum(getattr(self, c) for c in COMPONENTS)
        if abs(total - 1) > 1e-6:
            raise ValueError(f"Overall weights must sum to 1, got {total:g}")
        return self


DECODE_WEIGHTS = OverallWeights(accuracy=0.6, memory=0.1, speed=0.1, overhead=0.1, length=0.1)


class WeightLimits(_Closed):
    """The arena's bounds on every board's weights (the seed arena's by default)."""

    min_accuracy: float = Field(default=0.6, ge=0, le=1)
    min_accuracy_decode: float = Field(default=0.5, ge=0, le=1)
    min_memory_speed: float = Field(default=0.15, ge=0, le=1)

    def check(self, w: OverallWeights, decode: bool) -> str | None:
        floor = self.min_accuracy_decode if decode else self.min_accuracy
        if w.accuracy + 1e-9 < floor:
            return f"accuracy weight {w.accuracy:g} is below the arena's minimum {floor:g}"
        if w.memory + w.speed + 1e-9 < self.min_memory_speed:
            return f"memory + speed weights {w.memory + w.speed:g} are below the arena's minimum {self.min_memory_speed:g}"
        return None


class Components(_Closed):
    accuracy: float
    memory: float
    speed: float
    overhead: float
    length: float


class BudgetScore(_Closed):
    budget: float
    n: int  # answered questions at this budget
    errors: int
    components: Components
    overall: float
    kv_tokens_layer_max: int | None = None


class BoardMeasurement(_Closed):
    """One method's Overall on a board, with everything it was computed from summarised."""

    method: str
    overall: float
    components: Components
    weights: OverallWeights
    item_overall: dict[str, float]  # task/item -> the item's Overall (what the CI gate resamples)
    item_budget_overall: dict[str, dict[str, float]] = {}  # budget (as written) -> task/item -> Overall there
    per_budget: list[BudgetScore]
    accuracy_basis: Literal["task accuracy", "top-1 agreement", "mixed"]
    n_items: int
    errors: list[str]
    offline_s: float | None = None  # B_offline's one-off pass, mean per item (reported apart)


class BoardStanding(_Closed):
    """An entry of a board at some moment: who, and its Overall."""

    id: str
    kind: Literal["baseline", "submission"]
    overall: float
    n_items: int


def _ratio(a: float | int | None, b: float | int | None) -> float | None:
    return None if a is None or b is None or b <= 0 else float(a) / float(b)


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def row_components(row: Row, full: Row, full_task_mean: float | None, param_bytes: int,
                   free_generation: bool) -> tuple[Components, Literal["task accuracy", "top-1 agreement"]]:
    if row.score is not None and full_task_mean:
        acc, basis = row.score / full_task_mean, "task accuracy"
    else:
        acc, basis = (row.top1 or 0.0), "top-1 agreement"
    peak = _ratio(row.kv_bytes_peak, full.kv_bytes_peak)
    cost = _ratio(param_bytes + (row.kv_bytes_decode_mean or 0.0), param_bytes + (full.kv_bytes_decode_mean or 0.0))
    over = _ratio(row.compress_cpu_s or 0.0, row.model_cpu_s)
    gen = _ratio(full.generated_tokens, row.generated_tokens) if free_generation else 1.0
    return Components(accuracy=acc, memory=_clip(1 - peak) if peak is not None else 0.0,
                      speed=_clip(1 - cost) if cost is not None else 0.0,
                      overhead=1 - min(1.0, over) if over is not None else 1.0,
                      length=min(1.0, gen) if gen is not None else 1.0), basis  # type: ignore[return-value]


def _weighted(c: Components, w: OverallWeights) -> float:
    return sum(getattr(c, k) * getattr(w, k) for k in COMPONENTS)


def _mean_components(cs: list[Components]) -> Components:
    if not cs:
        return Components(accuracy=0, memory=0, speed=0, overhead=0, length=0)
    return Components(**{k: fmean(getattr(c, k) for c in cs) for k in COMPONENTS})


def measure(method: str, rows: list[Row], full: list[Row], weights: OverallWeights, param_bytes: int,
            budgets: list[float], free_generation: bool = False) -> BoardMeasurement:
    """The Overall of ``method``'s rows against the full cache's rows on the same items."""
    full_by_q = {(r.item, r.question, r.seed): r for r in full}
    task_scores: dict[str, list[float]] = defaultdict(list)
    for r in full:
        if r.score is not None:
            task_scores[r.task].append(r.score)
    task_mean = {t: fmean(v) for t, v in task_scores.items()}
    items = sorted({(r.task, r.item) for r in full})
    questions = {(r.item, r.question, r.seed) for r in full}
    mine = {(r.item, r.question, r.seed, r.budget): r for r in rows if r.method == method}
    per_item: dict[str, list[float]] = defaultdict(list)
    per_item_budget: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    per_budget: dict[float, list[tuple[Components, float]]] = defaultdict(list)
    budget_errors: dict[float, int] = defaultdict(int)
    layer_max: dict[float, int] = {}
    bases: set[str] = set()
    errors: list[str] = []
    item_task = {item: task for task, item in items}
    for (item, q, seed) in sorted(questions):
        ref = full_by_q[(item, q, seed)]
        for b in budgets:
            got = mine.get((item, q, seed, b)) or next(
                (r for r in rows if r.method == method and r.item == item and abs(r.budget - b) < 1e-9
                 and r.seed == seed and r.error), None)
            if got is None or got.error:
                why = got.error if got is not None and got.error else "no result"
                if why not in errors:
                    errors.append(why)
                per_item[f"{item_task[item]}/{item}"].append(0.0)
                per_item_budget[f"{b:g}"][f"{item_task[item]}/{item}"].append(0.0)
                budget_errors[b] += 1
                continue
            c, row_basis = row_components(got, ref, task_mean.get(got.task), param_bytes, free_generation)
            bases.add(row_basis)
            o = _weighted(c, weights)
            per_item[f"{item_task[item]}/{item}"].append(o)
            per_item_budget[f"{b:g}"][f"{item_task[item]}/{item}"].append(o)
            per_budget[b].append((c, o))
            if got.kv_tokens_layer_max is not None:
                layer_max[b] = max(layer_max.get(b, 0), got.kv_tokens_layer_max)
    item_overall = {k: round(fmean(v), 6) for k, v in sorted(per_item.items())}
    budgets_out = [BudgetScore(budget=b, n=len(per_budget[b]), errors=budget_errors[b],
                               components=_mean_components([c for c, _ in per_budget[b]]),
                               overall=round(fmean([o for _, o in per_budget[b]] + [0.0] * budget_errors[b]), 6)
                               if per_budget[b] or budget_errors[b] else 0.0,
                               kv_tokens_layer_max=layer_max.get(b)) for b in budgets]
    all_c = [c for b in budgets for c, _ in per_budget[b]]
    offline = [r.offline_s for r in rows if r.method == method and r.offline_s is not None]
    basis: Literal["task accuracy", "top-1 agreement", "mixed"] = (
        "mixed" if len(bases) > 1 else "top-1 agreement" if bases == {"top-1 agreement"} else "task accuracy")
    return BoardMeasurement(
        method=method, overall=round(fmean(item_overall.values()), 6) if item_overall else 0.0,
        components=_mean_components(all_c), weights=weights, item_overall=item_overall,
        item_budget_overall={b: {k: round(fmean(v), 6) for k, v in sorted(d.items())}
                             for b, d in per_item_budget.items()}, per_budget=budgets_out,
        accuracy_basis=basis, n_items=len(item_overall), errors=errors,
        offline_s=round(fmean(offline), 3) if offline else None)
