"""Boards made of measured numbers: every baseline and complete review on a board, its Overall on the board's
hidden test split, the board's best before each submission, the points, and the per-agent totals.

Only what was measured on the same test split with the same harness version is compared: bars or results from
another split are left out with the reason said. Partial reviews (``--only``/``--skip``) never enter. A review's
own view of its board (the board as it stood before it) is its standing stage's (``reviewbench.stages.standing``,
whose ``prior_board`` this reuses).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from reviewbench.arena import Arena
from reviewbench.overall import BoardMeasurement, BoardStanding, Components
from reviewbench.points import AgentStanding, BoardEntry, SubmissionPoints, board_best, standings
from reviewbench.stages.benchmark import BenchmarkData
from reviewbench.stages.standing import measure_benchmark, prior_board
from reviewbench.store import ReviewRecord, Store

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

BOARD_SCHEMA: Final = "reviewbench.board/2"


class LeaderboardRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rank: int | None = None  # 1 = the highest Overall on the board (baselines ranked too); None: not measured
    id: str
    kind: Literal["baseline", "submission"]
    agent: str | None
    submitted_at: datetime | None
    overall: float | None
    components: Components | None
    per_budget: dict[str, float] = Field(default_factory=dict)  # budget (as written) -> Overall at that budget
    best_before: BoardStanding | None = None
    benchmark_points: float | None = None
    points: float | None = None
    flags: list[str] = Field(default_factory=list)
    scores: dict[str, float | None] = Field(default_factory=dict)  # the judges' final criterion scores
    note: str = ""


class BoardTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    board: str
    setting: str
    budgets: list[float]
    budget_kind: str
    weights: dict[str, float]
    best: BoardStanding | None
    rows: list[LeaderboardRow]
    notes: list[str] = Field(default_factory=list)


class Leaderboard(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal["reviewbench.board/2"] = Field(default=BOARD_SCHEMA, alias="schema")
    arena: str
    boards: list[BoardTable]
    agents: list[AgentStanding]
    unboarded: list[SubmissionPoints] = Field(default_factory=list)


def _budget_map(m: BoardMeasurement) -> dict[str, float]:
    return {f"{b.budget:g}": round(b.overall, 4) for b in m.per_budget}


def _when(rec: ReviewRecord) -> tuple[datetime, str]:
    t = rec.submitted_at or EPOCH
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)), rec.submission_id


def ranked(rows: list[LeaderboardRow]) -> list[LeaderboardRow]:
    """Rows by Overall, highest first, each with its rank (equal Overall, equal rank); unmeasured rows last, unranked.
    Ties keep their order (baselines, then submission order)."""
    order = sorted(rows, key=lambda r: (r.overall is None, -(r.overall or 0.0)))
    out: list[LeaderboardRow] = []
    for n, r in enumerate(order, 1):
        rank = None
        if r.overall is not None:
            rank = out[-1].rank if out and out[-1].overall == r.overall else n
        out.append(r.model_copy(update={"rank": rank}))
    return out


def build_leaderboard(arena: Arena, store: Store) -> Leaderboard:
    """Every board as the arena's results table, ranked by Overall (the best before each submission is still the
    board as it stood at that submission's time)."""
    records = store.complete_reviews()
    points = {r.submission_id: SubmissionPoints.model_validate_json(r.points) for r in records if r.points}
    tables: list[BoardTable] = []
    for board in arena.config.boards:
        results = sorted((r for r in records if r.board == board.name and r.benchmark), key=_when)
        split = BenchmarkData.model_validate_json(results[-1].benchmark or "").split_hash if results else None
        prior = prior_board(arena, store, board, split, set())
        rows: list[LeaderboardRow] = []
        for e in prior.entries:
            m = prior.measurements[e.id]
            rows.append(LeaderboardRow(id=e.id, kind="baseline", agent=None, submitted_at=None, overall=m.overall,
                                       components=m.components, per_budget=_budget_map(m)))
        seen: list[BoardEntry] = list(prior.entries)
        notes = list(prior.notes)
        for rec in results:
            data = BenchmarkData.model_validate_json(rec.benchmark or "")
            if split is not None and data.split_hash != split:
                notes.append(f"{rec.submission_id}: measured on an older test split; not ranked")
                continue
            p = points.get(rec.submission_id)
            m = measure_benchmark(data, board)
            best = board_best(seen)
            rows.append(LeaderboardRow(
                id=rec.submission_id, kind="submission", agent=rec.agent, submitted_at=rec.submitted_at,
                overall=m.overall, components=m.components, per_budget=_budget_map(m),
                best_before=prior.standing(best) if best else None,
                benchmark_points=p.benchmark_points if p else None, points=p.total if p else None,
                flags=rec.flags, scores=rec.scores, note="; ".join(m.errors)[:200]))
            seen.append(BoardEntry(id=rec.submission_id, agent=rec.agent, kind="submission", board=board.name,
                                   item_scores=m.item_overall, flagged=rec.flagged))
        best = board_best(seen)
        tables.append(BoardTable(board=board.name, setting=board.setting, budgets=list(board.budgets),
                                 budget_kind=board.budget_kind, weights=board.overall_weights.model_dump(),
                                 best=prior.standing(best) if best else None, rows=ranked(rows), notes=notes))
    boarded = {b.name for b in arena.config.boards}
    return Leaderboard(arena=arena.config.arena.name, boards=tables, agents=standings(list(points.values())),
                       unboarded=[p for p in points.values() if p.board not in boarded])
