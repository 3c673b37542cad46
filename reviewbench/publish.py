"""What the agents may see: scores and short summaries, never the judges' reasoning.

The arena shares the leaderboard with the agents but not the judges' rationales, the machine evidence or the
hidden test items, so that agents cannot write for the judge or fit the test split. ``publish`` builds that view
from the leaderboard only (numbers, names, flags by name, points) and a one-line summary made from the same
numbers — nothing from a review's free text passes through.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.io import atomic_write_text
from reviewbench.arena import Arena
from reviewbench.leaderboard import Leaderboard, LeaderboardRow, build_leaderboard
from reviewbench.store import Store

PUBLIC_SCHEMA: Final = "reviewbench.public/1"


class PublicEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    kind: Literal["baseline", "submission"]
    agent: str | None
    submitted_at: datetime | None
    overall: float | None
    accuracy: float | None
    memory: float | None
    speed: float | None
    overhead: float | None
    best_before: str | None
    best_before_overall: float | None
    scores: dict[str, float | None] = Field(default_factory=dict)  # final criterion scores
    flags: list[str] = Field(default_factory=list)  # names only
    points: float | None = None
    summary: str = ""  # built from the numbers above, never from a review's text


class PublicBoard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    board: str
    budgets: list[float]
    weights: dict[str, float]
    entries: list[PublicEntry]


class PublicAgent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str
    total: float
    penalties: float


class PublicView(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal["reviewbench.public/1"] = Field(default=PUBLIC_SCHEMA, alias="schema")
    arena: str
    boards: list[PublicBoard]
    agents: list[PublicAgent]


def _summary(r: LeaderboardRow, board: str) -> str:
    if r.overall is None:
        return f"not measured on board {board}"
    parts = [f"Overall {r.overall:.4f} on board {board}"]
    if r.best_before is not None:
        parts.append(f"best before {r.best_before.overall:.4f}")
    scored = ", ".join(f"{k} {v:g}" for k, v in r.scores.items() if v is not None)
    if scored:
        parts.append(scored)
    parts.append("flagged: " + ", ".join(r.flags) if r.flags else "no flags")
    if r.points is not None:
        parts.append(f"{r.points:g} points")
    return "; ".join(parts)


def public_view(lb: Leaderboard) -> PublicView:
    boards = []
    for t in lb.boards:
        entries = []
        for r in t.rows:
            c = r.components
            entries.append(PublicEntry(
                id=r.id, kind=r.kind, agent=r.agent, submitted_at=r.submitted_at, overall=r.overall,
                accuracy=c.accuracy if c else None, memory=c.memory if c else None, speed=c.speed if c else None,
                overhead=c.overhead if c else None, best_before=r.best_before.id if r.best_before else None,
                best_before_overall=r.best_before.overall if r.best_before else None, scores=r.scores,
                flags=r.flags, points=r.points, summary=_summary(r, t.board) if r.kind == "submission" else ""))
        boards.append(PublicBoard(board=t.board, budgets=t.budgets, weights=t.weights, entries=entries))
    return PublicView(arena=lb.arena, boards=boards,
                      agents=[PublicAgent(agent=a.agent, total=a.total, penalties=a.penalties) for a in lb.agents])


def publish(arena: Arena, out: Path) -> list[Path]:
    """Write board.json and index.html (the leaderboard without links into the reviews) into ``out``."""
    from reviewbench.boardview import board_html

    with Store(arena.store_path) as store:
        lb = build_leaderboard(arena, store)
    view = public_view(lb)
    public_lb = lb.model_copy(update={"boards": [t.model_copy(update={"notes": []}) for t in lb.boards]})
    return [atomic_write_text(out / "board.json", view.model_dump_json(by_alias=True, indent=2) + "\n"),
            atomic_write_text(out / "index.html", board_html(public_lb))]
