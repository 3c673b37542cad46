"""A board's starting bar: the published baselines measured on the board's hidden test split.

``review harness baselines --arena DIR --board B`` runs the board's baselines (and the full cache) on its test
split and writes ``reviewbench.bars/2``: the harness's rows (predictions removed) per baseline and for the full
cache, with the split's content hash, the harness version and the model. Every submission on the board is
measured on the same items, so the paired bootstrap of the points rules compares like with like; the Overall
score is computed from the rows with the board's current weights whenever it is needed.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.io import read_json
from harness.results import ModelFacts, Result, Row
from reviewbench.arena import Arena, Board
from reviewbench.errors import ConfigError
from reviewbench.overall import BoardMeasurement, measure
from reviewbench.tomlio import describe_validation_error

BARS_SCHEMA: Final = "reviewbench.bars/2"


class BarsFile(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal["reviewbench.bars/2"] = Field(default=BARS_SCHEMA, alias="schema")
    board: str
    harness_board: str
    split_hash: str
    harness_version: str
    model: ModelFacts
    budgets: list[float]
    baselines: dict[str, list[Row]]
    full: list[Row]
    source: str
    created_at: datetime


def public_row(r: Row) -> Row:
    """A row without the model's answer text (an answer to a hidden item says what the item asked)."""
    return replace(r, prediction=None)


def bars_from_result(result: Result, board: Board, split_hash: str, source: str) -> BarsFile:
    rows: dict[str, list[Row]] = {}
    for r in result.rows:
        if r.method != "full":
            rows.setdefault(r.method, []).append(public_row(r))
    return BarsFile(board=board.name, harness_board=board.harness_board, split_hash=split_hash,
                    harness_version=result.harness_version, model=result.model, budgets=list(board.budgets),
                    baselines=rows, full=[public_row(r) for r in result.rows if r.method == "full"], source=source,
                    created_at=datetime.now(timezone.utc).replace(microsecond=0))


def load_bars(arena: Arena, board: Board) -> BarsFile | None:
    """The board's bars file, or None when the board names none. A broken file is the arena's mistake."""
    if not board.bars:
        return None
    where = arena.root / "arena.toml"
    path = (arena.root / board.bars).resolve()
    try:
        data = read_json(path)
    except (OSError, ValueError) as e:
        raise ConfigError(where, f"board {board.name}: bars file {board.bars}: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(where, f"board {board.name}: bars file {board.bars} holds a {type(data).__name__}, "
                                 "not a reviewbench.bars/2 object")
    if data.get("schema") != BARS_SCHEMA:
        raise ConfigError(where, f"board {board.name}: bars file {board.bars} is {data.get('schema')!r}, not "
                                 f"{BARS_SCHEMA}: measure the baselines on the test split with `review harness "
                                 f"baselines --arena . --board {board.name}`")
    try:
        return BarsFile.model_validate(data)
    except ValidationError as e:
        raise ConfigError(where, f"board {board.name}: bars file {board.bars}: {describe_validation_error(e)}") from None


def free_generation(full: list[Row], harness_board: str) -> bool:
    """Board C items with a task metric are generated freely (their length counts); fidelity items are forced."""
    return harness_board == "C" and any(r.score is not None for r in full)


def baseline_measurements(bars: BarsFile, board: Board) -> dict[str, BoardMeasurement]:
    free = free_generation(bars.full, bars.harness_board)
    return {name: measure(name, rows, bars.full, board.overall_weights, bars.model.param_bytes, bars.budgets, free)
            for name, rows in sorted(bars.baselines.items())}


def stale_reason(bars: BarsFile, board: Board, split_hash: str | None, harness_version: str) -> str | None:
    """Why these bars cannot be compared with a submission measured on ``split_hash``, or None."""
    if bars.harness_board != board.harness_board:
        return f"measured on harness board {bars.harness_board}, the board runs {board.harness_board}"
    if split_hash is not None and bars.split_hash != split_hash:
        return "measured on another test split (its content hash differs)"
    if bars.harness_version != harness_version:
        return f"measured with harness version {bars.harness_version}, this is {harness_version}"
    if sorted(bars.budgets) != sorted(board.budgets):
        return f"measured at budgets {bars.budgets}, the board's are {board.budgets}"
    return None


def bars_path_hint(board: Board) -> Path:
    return Path(board.bars or f"baselines/{board.name}.json")
