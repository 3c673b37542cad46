"""A small Python API for analysis: reviews, board entries and calibration rows as pandas DataFrames (the way
Inspect's ``evals_df`` works). pandas is an optional extra: ``pip install 'reviewbench[analysis]'``.

    from reviewbench.api import reviews_df, board_df, calibration_df
    board_df("examples/arena").sort_values("overall", ascending=False)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from reviewbench.leaderboard import Leaderboard


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        from reviewbench.errors import UserError

        raise UserError(None, "this needs pandas: pip install 'reviewbench[analysis]'") from None
    return pandas


def board_frame(lb: "Leaderboard") -> "pd.DataFrame":
    from reviewbench.boardview import FLAT_COLUMNS, flat_rows

    return _pandas().DataFrame(flat_rows(lb), columns=list(FLAT_COLUMNS))


def board_df(arena: str | Path) -> "pd.DataFrame":
    """One row per board entry (baselines and complete reviews): Overall, its components, best before, points."""
    from reviewbench.leaderboard import build_leaderboard
    from reviewbench.review import open_arena
    from reviewbench.store import Store

    a = open_arena(None, Path(arena))
    with Store(a.store_path) as store:
        return board_frame(build_leaderboard(a, store))


def reviews_df(arena: str | Path) -> "pd.DataFrame":
    """One row per complete review: verdict scores, flags, points, and the measured Overall when there is one."""
    from reviewbench.contracts import PointsData
    from reviewbench.review import open_arena
    from reviewbench.store import Store

    a = open_arena(None, Path(arena))
    rows = []
    with Store(a.store_path) as store:
        for r in store.complete_reviews():
            p = PointsData.model_validate_json(r.points) if r.points else None
            rows.append({"submission": r.submission_id, "agent": r.agent, "board": r.board,
                         "submitted_at": r.submitted_at, "run_id": r.run_id, "flagged": r.flagged,
                         "flags": ",".join(r.flags), **{f"score_{k}": v for k, v in r.scores.items()},
                         "judge_points": p.judge_points if p else None,
                         "benchmark_points": p.benchmark_points if p else None, "points": p.total if p else None,
                         "overall": p.measurement.overall if p and p.measurement else None,
                         "best_before": p.best_before.id if p and p.best_before else None, "outcome": r.outcome})
    return _pandas().DataFrame(rows)


def calibration_df(report: str | Path) -> "pd.DataFrame":
    """One row per (case, judge) of a calibration report: scores, flags, the first prior work named, cost."""
    from harness.io import read_json

    data = read_json(Path(report))
    rows = []
    for case in data.get("cases", []):
        for j in case.get("judges", []):
            first = (j.get("prior_work") or [{}])[0]
            rows.append({"case": case["code"], "judge": j["judge_id"], "family": j["family"], "model": j["model"],
                         "role": j["role"], **{f"score_{k}": v for k, v in (j.get("scores") or {}).items()},
                         "flags": ",".join(j.get("flags") or []), "prior_work": first.get("title"),
                         "prior_work_arxiv": first.get("arxiv_id"), "error": j.get("error"),
                         "input_tokens": j.get("input_tokens"), "cost_usd": j.get("cost_usd"),
                         "seconds": j.get("seconds")})
    return _pandas().DataFrame(rows)
