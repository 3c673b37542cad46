"""Exports for analysis: `review board --format csv|parquet|json`, `review calibrate --format ...`, and the pandas
API (reviews_df, board_df, calibration_df) on a small store built directly (no review run)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas", reason="the analysis extra (pandas) is not installed")
pytest.importorskip("pyarrow", reason="the analysis extra (pyarrow) is not installed")

from reviewbench.api import (CALIBRATION_COLUMNS, REVIEW_COLUMNS, board_df, calibration_df,  # noqa: E402
                             calibration_frame, reviews_df)
from reviewbench.boardview import FLAT_COLUMNS  # noqa: E402
from reviewbench.calibrate.command import export  # noqa: E402
from reviewbench.calibrate.report import CalibrationReport  # noqa: E402
from reviewbench.cli import main  # noqa: E402
from reviewbench.errors import UserError  # noqa: E402
from tests import smallarena  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LOCAL_REPORT = ROOT / "calibration" / "reports" / "local-2026-12-02.json"


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    return smallarena.build(tmp_path_factory.mktemp("exports") / "arena")


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_board_csv_on_stdout_is_one_row_per_entry(small, capsys):
    rc, out, err = _cli(capsys, "board", "--arena", str(small), "--format", "csv")
    assert rc == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == list(FLAT_COLUMNS)
    assert sorted(r["id"] for r in rows) == sorted(["baseline:expected_attention", "baseline:snapkv",
                                                    "baseline:window", "agent1-001", "agent2-001", "agent1-002"])
    # ranked by Overall within each board, rank 1 first
    for board in {r["board"] for r in rows}:
        mine = [r for r in rows if r["board"] == board]
        assert [float(r["overall"]) for r in mine] == sorted((float(r["overall"]) for r in mine), reverse=True)
        assert mine[0]["rank"] == "1"
    by = {r["id"]: r for r in rows}
    assert by["agent2-001"]["flags"] == "RULE_VIOLATION" and by["agent2-001"]["points"] == "0.0"
    assert by["agent1-002"]["best_before"] == "agent1-001"  # agent2-001 scored higher but is flagged
    assert float(by["agent1-001"]["overall"]) > float(by["baseline:snapkv"]["overall"])
    assert by["baseline:snapkv"]["kind"] == "baseline" and by["baseline:snapkv"]["agent"] == ""


def test_board_json_and_parquet_files_agree_with_the_api(small, tmp_path, capsys):
    rc, out, err = _cli(capsys, "board", "--arena", str(small), "--format", "json", "--out", str(tmp_path / "b.json"))
    assert rc == 0 and "wrote" in out, err
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["schema"] == "reviewbench.board/2" and [b["board"] for b in doc["boards"]] == ["A", "C"]
    assert {a["agent"]: a["total"] for a in doc["agents"]} == {"agent1": 22.5, "agent3": 3.0, "agent2": -20.0}

    rc, _, err = _cli(capsys, "board", "--arena", str(small), "--format", "parquet", "--out", str(tmp_path / "b.pq"))
    assert rc == 0, err
    frame = pd.read_parquet(tmp_path / "b.pq")
    api = board_df(small)
    assert list(frame.columns) == list(FLAT_COLUMNS)
    pd.testing.assert_frame_equal(frame.reset_index(drop=True), api.reset_index(drop=True), check_dtype=False)
    # the JSON holds the same Overall as the flat exports
    overall = {r["id"]: r["overall"] for b in doc["boards"] for r in b["rows"]}
    assert overall == dict(zip(api["id"], api["overall"]))
    assert str(api["submitted_at"].dtype).startswith("datetime64")


@pytest.mark.parametrize("args,message", [
    (("--format", "xml"), "expected json, csv or parquet"),
    (("--format", "parquet"), "--format parquet needs --out FILE"),
    (("--html",), "--html needs --out FILE"),
])
def test_board_export_mistakes_are_one_line(small, capsys, args, message):
    rc, _, err = _cli(capsys, "board", "--arena", str(small), *args)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and message in err, err


def test_reviews_df_complete_and_drafts(small):
    df = reviews_df(small)
    assert list(df.columns[:len(REVIEW_COLUMNS)]) == REVIEW_COLUMNS
    assert {"score_novelty", "score_effectiveness", "score_soundness"} <= set(df.columns)
    assert sorted(df["submission"]) == ["agent1-001", "agent1-002", "agent2-001", "agent3-001"]
    assert not df["partial"].any()
    row = df.set_index("submission").loc["agent2-001"]
    assert bool(row["flagged"]) and row["flags"] == "RULE_VIOLATION" and row["penalty"] == 20.0
    assert row["best_before"] == "agent1-001" and row["score_novelty"] == 3.0
    assert df.set_index("submission").loc["agent1-002", "short_name"] == smallarena.HOSTILE  # data, kept verbatim
    assert pd.isna(df.set_index("submission").loc["agent3-001", "overall"])  # on no board: not measured
    with_drafts = reviews_df(small, partial=True)
    drafts = with_drafts[with_drafts["partial"]]
    assert list(drafts["submission"]) == ["agent2-002"] and len(with_drafts) == 5


def test_calibration_df_and_exports(tmp_path, capsys):
    df = calibration_df(LOCAL_REPORT)
    data = json.loads(LOCAL_REPORT.read_text())
    assert len(df) == sum(len(c["judges"]) for c in data["cases"])
    assert list(df.columns[:len(CALIBRATION_COLUMNS)]) == CALIBRATION_COLUMNS
    baselines = df[df["kind"] == "baseline"]
    assert len(baselines) and set(baselines["method"]) <= {c["method"] for c in data["answer_key"]["cases"]}
    assert set(df["role"]) == {"primary", "tie_break"}

    report = CalibrationReport.model_validate(data)
    export(report, "csv", tmp_path / "c.csv")
    export(report, "parquet", tmp_path / "c.parquet")
    from_csv = pd.read_csv(tmp_path / "c.csv")
    from_pq = pd.read_parquet(tmp_path / "c.parquet")
    assert len(from_csv) == len(from_pq) == len(df)
    assert list(from_pq.columns) == list(calibration_frame(data).columns)
    assert from_csv["score_novelty"].round(6).tolist() == df["score_novelty"].round(6).tolist()
    export(report, "json", tmp_path / "c.json")
    assert json.loads((tmp_path / "c.json").read_text())["schema"] == "reviewbench.calibration/1"

    with pytest.raises(UserError):
        calibration_df(tmp_path / "c.csv")
    (tmp_path / "other.json").write_text('{"schema": "reviewbench.board/2"}')
    with pytest.raises(UserError):
        calibration_df(tmp_path / "other.json")


@pytest.mark.parametrize("args,message", [
    (("--format", "xml"), "expected json, csv or parquet"),
    (("--format", "parquet"), "needs --out"),
    (("--out", "x.csv"), "--out goes with --format"),
])
def test_calibrate_export_mistakes_are_one_line_and_run_nothing(capsys, args, message):
    rc, out, err = _cli(capsys, "calibrate", "--suite", str(ROOT / "calibration"), *args)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert "Calibrating" not in out + err
