"""A board's starting bar: the published baselines' measured results, from a harness.result/1 file or the compact
``reviewbench.bars/1`` file that ``review harness bars`` derives from one (what an arena keeps in baselines/).

Each baseline becomes a :class:`BoardEntry` of kind ``baseline`` whose per-item scores are keyed
``task/item/q<question>/<budget>``, the same keys a submission's harness re-run produces, so the paired
bootstrap of the points rules compares like with like. The full cache is the normaliser, not a baseline.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from reviewbench.errors import ConfigError
from reviewbench.points import BoardEntry


def item_key(row: dict) -> str:
    return f"{row['task']}/{row['item']}/q{row.get('question', 0)}/{row['budget']:g}"


def row_score(row: dict) -> float | None:
    """Task accuracy where the board has one; board C's reasoning-trace fidelity otherwise (top-1 agreement)."""
    for key in ("score", "top1"):
        if row.get(key) is not None:
            return float(row[key])
    return None


def entries_from_result(result: dict, board: str) -> list[BoardEntry]:
    scores: dict[str, dict[str, float]] = defaultdict(dict)
    for row in result.get("rows", []):
        if row.get("method") == "full" or row.get("error"):
            continue
        s = row_score(row)
        if s is not None:
            scores[row["method"]][item_key(row)] = s
    return [BoardEntry(id=f"baseline:{m}", agent=None, kind="baseline", board=board, item_scores=s)
            for m, s in sorted(scores.items())]


BARS_SCHEMA = "reviewbench.bars/1"


def compact_bars(result: dict, source: str) -> dict:
    """The part of a harness.result/1 that points need: per baseline, its per-item scores."""
    board = result["config"]["board"]
    return {"schema": BARS_SCHEMA, "board": board, "source": source,
            "config": {k: result["config"].get(k) for k in ("split", "items", "length", "tasks", "budgets", "model")},
            "baselines": {e.id.removeprefix("baseline:"): e.item_scores for e in entries_from_result(result, board)}}


def load_bars(arena_root: Path, board_name: str, bars: str | None) -> list[BoardEntry]:
    if not bars:
        return []
    path = (arena_root / bars).resolve()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(arena_root / "arena.toml", f"board {board_name}: bars file {bars}: {e}") from None
    if data.get("schema") == "harness.result/1":
        return entries_from_result(data, board_name)
    if data.get("schema") == BARS_SCHEMA:
        return [BoardEntry(id=f"baseline:{m}", agent=None, kind="baseline", board=board_name, item_scores=s)
                for m, s in sorted(data["baselines"].items())]
    raise ConfigError(arena_root / "arena.toml", f"board {board_name}: bars file {bars} is neither harness.result/1 "
                                                 f"nor {BARS_SCHEMA}")
