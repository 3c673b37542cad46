"""The Python API: run a review, and read reviews, board entries and calibration rows as pandas DataFrames (the
way Inspect's ``evals_df`` works). pandas is an optional extra: ``pip install 'reviewbench[analysis]'``.

    from reviewbench.api import review, reviews_df, board_df, calibration_df
    report, out_dir = review("examples/arena/submit/agent1-002")   # as `review submit/agent1-002` does
    report.outcome, report.verdict, report.stage("benchmark")
    board_df("examples/arena")                                      # ranked by Overall per board

The row builders (``board_rows``, ``review_rows``, ``calibration_rows``) need no pandas: the CLI's CSV exports
use them, so a CSV and a DataFrame of the same thing always have the same columns.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    import pandas as pd

REVIEW_COLUMNS = ["submission", "agent", "board", "submitted_at", "run_id", "partial", "short_name", "flagged",
                  "flags", "judge_points", "benchmark_points", "points", "penalty", "overall", "best_before",
                  "best_before_overall", "outcome"]  # then score_<criterion> per criterion
CALIBRATION_COLUMNS = ["case", "kind", "method", "judge", "family", "model", "role", "flags", "expected_flags",
                       "prior_work", "prior_work_arxiv", "error", "input_tokens", "output_tokens", "cost_usd",
                       "seconds", "cached"]  # then score_<criterion> per criterion


def review(bundle_dir: str | Path, arena_dir: str | Path | None = None, **options: Any) -> Any:
    """Review one submission in this process, exactly as ``review BUNDLE_DIR`` does (stored stages replay), and
    return ``Reviewed(report, out_dir)``: the ``ReviewReport`` (review.json's model) and the folder written.
    ``options``: ``only``/``skip``/``rerun`` (sets of stage names), ``fresh_judges``, ``progress`` (a callable
    given live lines), ``on_start``/``on_stage`` (called per stage), ``executor`` (e.g.
    ``reviewbench.executor.ray_executor("HOST:PORT")``). Bad input raises ``reviewbench.errors.UserError``
    (``.one_line()`` says which file and what), with nothing written."""
    from reviewbench.review import review as run

    return run(Path(bundle_dir), Path(arena_dir) if arena_dir is not None else None, **options)


def pandas_module() -> Any:
    try:
        import pandas
    except ImportError:
        from reviewbench.errors import UserError

        raise UserError(None, "this needs pandas: pip install 'reviewbench[analysis]'") from None
    return pandas


def numeric(frame: "pd.DataFrame", floats: list[str], ints: tuple[str, ...] = ()) -> "pd.DataFrame":
    """Number columns as numbers, never ``object`` (see :func:`reviewbench.boardview.numeric`)."""
    from reviewbench.boardview import numeric as typed

    return typed(frame, floats, ints)


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> "pd.DataFrame":
    extra = sorted({k for r in rows for k in r} - set(columns))
    return pandas_module().DataFrame(rows, columns=columns + extra)


# --- the board ----------------------------------------------------------------------------------------------
def board_df(arena: str | Path) -> "pd.DataFrame":
    """One row per board entry (baselines and complete reviews): Overall, its components, best before, points."""
    from reviewbench.leaderboard import build_leaderboard
    from reviewbench.review import open_arena
    from reviewbench.store import Store

    from reviewbench.boardview import board_frame

    a = open_arena(None, Path(arena))
    with Store(a.store_path) as store:
        return board_frame(build_leaderboard(a, store))


# --- reviews ------------------------------------------------------------------------------------------------
def review_rows(arena: str | Path, partial: bool = False) -> list[dict[str, Any]]:
    """One row per complete review (the store's record, with its report's short name); with ``partial`` also
    the drafts (``--only``/``--skip`` runs under reviews/<id>/partial/), marked ``partial``."""
    from reviewbench.stages.points import PointsData
    from reviewbench.report import load_report
    from reviewbench.review import open_arena
    from reviewbench.store import Store

    a = open_arena(None, Path(arena))
    rows: list[dict[str, Any]] = []
    with Store(a.store_path) as store:
        records = store.complete_reviews()
    for r in records:
        p = PointsData.model_validate_json(r.points) if r.points else None
        report = a.reviews_dir / r.submission_id / "review.json"
        short = load_report(report).submission.short_name if report.is_file() else None
        rows.append({"submission": r.submission_id, "agent": r.agent, "board": r.board,
                     "submitted_at": r.submitted_at, "run_id": r.run_id, "partial": False, "short_name": short,
                     "flagged": r.flagged, "flags": ",".join(r.flags),
                     "judge_points": p.judge_points if p else None,
                     "benchmark_points": p.benchmark_points if p else None, "points": p.total if p else None,
                     "penalty": p.penalty if p else None,
                     "overall": p.measurement.overall if p and p.measurement else None,
                     "best_before": p.best_before.id if p and p.best_before else None,
                     "best_before_overall": p.best_before.overall if p and p.best_before else None,
                     "outcome": r.outcome, **{f"score_{k}": v for k, v in r.scores.items()}})
    if partial:
        for path in sorted(a.reviews_dir.glob("*/partial/review.json")):
            d = load_report(path)
            v, p = d.verdict, d.points
            rows.append({"submission": d.submission.id, "agent": d.submission.agent, "board": d.submission.board,
                         "submitted_at": d.submission.submitted_at, "run_id": d.run_id, "partial": True,
                         "short_name": d.submission.short_name, "flagged": bool(v and v.standing_flags),
                         "flags": ",".join(f.flag for f in v.standing_flags) if v else "",
                         "judge_points": v.judge_points if v else None,
                         "benchmark_points": p.benchmark_points if p else None, "points": p.total if p else None,
                         "penalty": p.penalty if p else None,
                         "overall": p.measurement.overall if p and p.measurement else None,
                         "best_before": p.best_before.id if p and p.best_before else None,
                         "best_before_overall": p.best_before.overall if p and p.best_before else None,
                         "outcome": d.outcome, **{f"score_{k}": s for k, s in (v.scores if v else {}).items()}})
    return rows


def reviews_df(arena: str | Path, partial: bool = False) -> "pd.DataFrame":
    """One row per complete review: verdict scores (``score_<criterion>``), flags, points, the measured Overall
    and the board's best before it; ``partial=True`` adds the drafts, marked in the ``partial`` column."""
    frame = _frame(review_rows(arena, partial), REVIEW_COLUMNS)
    frame["submitted_at"] = pandas_module().to_datetime(frame["submitted_at"], utc=True)
    return numeric(frame, ["judge_points", "benchmark_points", "points", "penalty", "overall", "best_before_overall",
                           *(c for c in frame.columns if c.startswith("score_"))], ints=("run_id",))


# --- calibration --------------------------------------------------------------------------------------------
def calibration_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per (case, judge) of a ``reviewbench.calibration/1`` report (as loaded from its JSON): the judge's
    scores, flags and first prior work named, beside what the answer key says the case is."""
    key = {c.get("code"): c for c in (report.get("answer_key") or {}).get("cases", [])}
    rows = []
    for case in report.get("cases", []):
        truth = key.get(case.get("code"), {})
        for j in case.get("judges", []):
            first = (j.get("prior_work") or [{}])[0]
            rows.append({"case": case["code"], "kind": truth.get("kind"), "method": truth.get("method"),
                         "judge": j["judge_id"], "family": j.get("family"), "model": j.get("model"),
                         "role": j.get("role"), "flags": ",".join(j.get("flags") or []),
                         "expected_flags": ",".join(truth.get("expected_flags") or []),
                         "prior_work": first.get("title"), "prior_work_arxiv": first.get("arxiv_id"),
                         "error": j.get("error"), "input_tokens": j.get("input_tokens"),
                         "output_tokens": j.get("output_tokens"), "cost_usd": j.get("cost_usd"),
                         "seconds": j.get("seconds"), "cached": j.get("cached"),
                         **{f"score_{k}": v for k, v in (j.get("scores") or {}).items()}})
    return rows


def calibration_frame(report: Mapping[str, Any]) -> "pd.DataFrame":
    frame = _frame(calibration_rows(report), CALIBRATION_COLUMNS)
    return numeric(frame, ["cost_usd", "seconds", *(c for c in frame.columns if c.startswith("score_"))],
                   ints=("input_tokens", "output_tokens"))


def calibration_df(report: str | Path) -> "pd.DataFrame":
    """One row per (case, judge) of a calibration report JSON (calibration/reports/<panel>-<date>.json)."""
    from harness.io import read_json
    from reviewbench.errors import UserError

    try:
        data = read_json(Path(report))
    except (OSError, ValueError) as e:
        raise UserError(report, f"not a calibration report: {e}") from None
    if not isinstance(data, dict) or data.get("schema") != "reviewbench.calibration/1":
        raise UserError(report, "not a reviewbench.calibration/1 report")
    return calibration_frame(data)
