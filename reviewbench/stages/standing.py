"""The board standing stage: the board as it stood before this submission, computed once per review.

After the benchmark: the submission's own Overall (its measurement with the board's current weights), the
board's measured entries before it (the baselines on the same split and the earlier submissions' complete results,
each re-measured with the current weights), the best of them, and the gain over that best with its paired
bootstrap CI (over the per-item Overall, and per budget). The judges (their benchmark lines and the evidence
judge's board facts) and the points read it from here; nothing else looks at the store for the board.

It reads other submissions' results from the store and the board's bars file, which no input hash covers: never
cached (it is cheap: numbers already measured, re-weighted). Its output is hashed like any stage's, so the
judges and the points rerun exactly when the board before the submission changed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.results import harness_version
from reviewbench.arena import Arena, Board
from reviewbench.bars import baseline_measurements, free_generation, load_bars, stale_reason
from reviewbench.evidence.facts import BudgetGain
from reviewbench.overall import BoardMeasurement, BoardStanding, measure
from reviewbench.pipeline import Stage, StageContext, StageKey, StageOutput, config_tables
from reviewbench.points import BoardEntry, GainCI, board_best, gain_ci, paired_bootstrap
from reviewbench.stages.benchmark import BENCHMARK, BenchmarkData
from reviewbench.store import Store


def measure_benchmark(data: BenchmarkData, board: Board) -> BoardMeasurement:
    """A benchmark's Overall with the board's current weights (its rows are stored raw)."""
    return measure(data.method, data.rows, data.full, board.overall_weights, data.model.param_bytes,
                   list(board.budgets), free_generation(data.full, data.harness_board))


class PriorBoard(BaseModel):
    """What a submission is compared with: the board's measured entries before it."""

    entries: list[BoardEntry]
    measurements: dict[str, BoardMeasurement]
    notes: list[str] = Field(default_factory=list)

    def best(self) -> BoardEntry | None:
        return board_best(self.entries)

    def standing(self, entry: BoardEntry) -> BoardStanding:
        return BoardStanding(id=entry.id, kind=entry.kind, overall=round(entry.mean, 6), n_items=len(entry.item_scores))


def prior_board(arena: Arena, store: Store, board: Board, split_hash: str | None, earlier_ids: set[str]) -> PriorBoard:
    """Baselines (bars on the same split) and the earlier submissions' complete results on the same split."""
    entries: list[BoardEntry] = []
    measurements: dict[str, BoardMeasurement] = {}
    notes: list[str] = []
    bars = load_bars(arena, board)
    if bars is None:
        notes.append(f"board {board.name} has no bars file: no baseline to compare with")
    elif (why := stale_reason(bars, board, split_hash, harness_version(board.harness_board))) is not None:
        notes.append(f"board {board.name}'s bars are left out: {why} (re-run `review harness baselines --arena . "
                     f"--board {board.name}`)")
    else:
        for name, m in baseline_measurements(bars, board).items():
            entries.append(BoardEntry(id=f"baseline:{name}", kind="baseline", board=board.name,
                                      item_scores=m.item_overall))
            measurements[f"baseline:{name}"] = m
    for rec in store.board_results(board.name):
        if rec.submission_id not in earlier_ids:
            continue
        data = BenchmarkData.model_validate_json(rec.benchmark or "")
        if (split_hash is not None and data.split_hash != split_hash) or data.harness_version != harness_version(board.harness_board):
            notes.append(f"{rec.submission_id} was measured on another split or harness version: left out")
            continue
        m = measure_benchmark(data, board)
        entries.append(BoardEntry(id=rec.submission_id, agent=rec.agent, kind="submission", board=board.name,
                                  submitted_at=rec.submitted_at, item_scores=m.item_overall, flagged=rec.flagged))
        measurements[rec.submission_id] = m
    return PriorBoard(entries=entries, measurements=measurements, notes=notes)


class StandingEntry(BaseModel):
    """One entry of the board before the submission, measured with the board's current weights."""

    model_config = ConfigDict(extra="forbid")

    id: str
    kind: Literal["baseline", "submission"]
    agent: str | None = None
    submitted_at: datetime | None = None
    flagged: bool = False
    overall: float
    item_scores: dict[str, float]  # task/item -> the item's Overall (what the CI gate resamples)
    per_budget: dict[str, float]  # budget (as written) -> Overall at that budget (the report's plot)

    def entry(self, board: str) -> BoardEntry:
        return BoardEntry(id=self.id, agent=self.agent, kind=self.kind, board=board, submitted_at=self.submitted_at,
                          item_scores=self.item_scores, flagged=self.flagged)


class StandingData(BaseModel):
    """The board as it stood before this submission, and this submission against it."""

    model_config = ConfigDict(extra="forbid")

    board: str
    split_hash: str | None  # the benchmark's split (None: not measured; then every earlier result is listed)
    measurement: BoardMeasurement | None  # this submission's own Overall (None: the benchmark did not run)
    entries: list[StandingEntry]  # baselines on the same split, then the earlier complete results
    best: BoardStanding | None  # the best unflagged entry before it (what the points gate compares with)
    gate: GainCI | None = None  # the gain over that best: paired bootstrap over the per-item Overall
    gains: list[BudgetGain] = Field(default_factory=list)  # the same per budget
    margin: float  # the points rules' minimum CI gain
    notes: list[str] = Field(default_factory=list)

    def board_entries(self) -> list[BoardEntry]:
        return [e.entry(self.board) for e in self.entries]

    def best_entry(self) -> BoardEntry | None:
        return board_best(self.board_entries())


STANDING = StageKey("standing", StandingData)


def standing_stage(ctx: StageContext) -> StageOutput[StandingData]:
    b = ctx.bundle
    board = ctx.arena.config.board(b.board) if b.board else None
    if board is None:
        return StageOutput(status="not_run", reason="the bundle names no board declared in arena.toml")
    bench = ctx.get(BENCHMARK)
    prior = prior_board(ctx.arena, ctx.store, board, bench.split_hash if bench else None, {e.id for e in ctx.earlier})
    _, rules = ctx.rubric.rule_set(ctx.arena.config.points.rule_set)
    m = measure_benchmark(bench, board) if bench is not None else None
    best = prior.best()
    gate, gains = None, []
    if m is not None and best is not None:
        gate = gain_ci(BoardEntry(id=b.id, agent=b.agent, board=board.name, item_scores=m.item_overall), best, rules)
        ref = prior.measurements[best.id]
        for budget in m.per_budget:
            key = f"{budget.budget:g}"
            n, g, lo, hi = paired_bootstrap(m.item_budget_overall.get(key, {}), ref.item_budget_overall.get(key, {}),
                                            rules.bootstrap_samples, rules.ci_level, rules.bootstrap_seed)
            if n:
                gains.append(BudgetGain(budget=budget.budget, gain=round(g, 6), lower=round(lo, 6), upper=round(hi, 6)))
    entries = [StandingEntry(id=e.id, kind=e.kind, agent=e.agent, submitted_at=e.submitted_at, flagged=e.flagged,
                             overall=prior.measurements[e.id].overall, item_scores=e.item_scores,
                             per_budget={f"{x.budget:g}": round(x.overall, 4) for x in prior.measurements[e.id].per_budget})
                for e in prior.entries]
    data = StandingData(board=board.name, split_hash=bench.split_hash if bench else None, measurement=m,
                        entries=entries, best=prior.standing(best) if best else None, gate=gate, gains=gains,
                        margin=rules.min_ci_gain, notes=prior.notes)
    n_base = sum(e.kind == "baseline" for e in entries)
    summary = (f"board {board.name} before this submission: {n_base} baselines and {len(entries) - n_base} earlier "
               f"results; " + (f"best {best.id} (Overall {best.mean:.4f})" if best else "no measured entry yet"))
    if m is not None:
        summary += f"; this submission Overall {m.overall:.4f}"
        if gate is not None and gate.n_items:
            summary += (f", gain {gate.gain:+.4f} ({gate.level:.0%} CI [{gate.lower:+.4f}, {gate.upper:+.4f}] over "
                        f"{gate.n_items} items)")
    else:
        summary += "; this submission was not measured"
    return StageOutput(status="ok", summary=summary, data=data)


STAGE = Stage(STANDING, "Board standing", (BENCHMARK,), standing_stage, cacheable=False, reads_results=True,
              config_inputs=config_tables("boards", "points"),
              code=("reviewbench.overall", "reviewbench.bars", "reviewbench.points", "harness.results"))
