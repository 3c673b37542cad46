import sqlite3

import pytest

from reviewbench.errors import UserError
from reviewbench.store import SCHEMA_VERSION, Store, StoredStage


def stage(key="h1", payload=None):
    return StoredStage(stage="bundle", input_hash=key, status="ok", output_hash="o", payload=payload or {"a": 1},
                       seconds=0.1, created_at="2026-12-01T00:00:00+00:00")


def test_new_store_is_migrated_and_in_wal_mode(tmp_path):
    with Store(tmp_path / "r.sqlite") as s:
        assert s.schema_version == SCHEMA_VERSION
    db = sqlite3.connect(tmp_path / "r.sqlite")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"submissions", "review_runs", "stage_results", "judge_calls", "points"} <= tables


def test_processes_opening_a_new_store_at_once_each_get_it_migrated_once(tmp_path):
    """Two reviews of one arena started together: whoever waits for the other's migration must not run it again
    (it used to fail with 'table ... already exists')."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = ("import sys; from reviewbench.store import Store\n"
            "with Store(__import__('pathlib').Path(sys.argv[1])) as s: print(s.schema_version)")
    for attempt in range(3):
        path = tmp_path / f"r{attempt}.sqlite"
        procs = [subprocess.Popen([sys.executable, "-c", code, str(path)], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        for p in procs:
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0 and out.strip() == str(SCHEMA_VERSION), err


def test_store_from_a_newer_reviewbench_is_refused(tmp_path):
    db = sqlite3.connect(tmp_path / "r.sqlite")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(UserError, match="newer"):
        Store(tmp_path / "r.sqlite")


def test_stage_results_round_trip_by_input_hash(tmp_path):
    with Store(tmp_path / "r.sqlite") as s:
        s.put_stage("a-001", stage(payload={"x": [1, 2]}))
        assert s.get_stage("bundle", "h1").payload == {"x": [1, 2]}
        assert s.get_stage("bundle", "other") is None
        assert s.latest_stage("a-001", "bundle").input_hash == "h1"


def test_a_failed_transaction_writes_nothing(tmp_path):
    with Store(tmp_path / "r.sqlite") as s:
        with pytest.raises(RuntimeError):
            with s.transaction() as db:
                db.execute("INSERT INTO points VALUES ('a-001','a',NULL,'{}',1,'t')")
                raise RuntimeError("crash mid-write")
        assert s.all_points() == []


def test_judge_calls_are_cached_by_request_hash(tmp_path):
    with Store(tmp_path / "r.sqlite") as s:
        s.put_judge_call("rh", "anthropic", "claude", {"messages": []}, {"content": "x"}, 10, 5, 0.001)
        got = s.get_judge_call("rh")
        assert got["response"] == {"content": "x"} and got["input_tokens"] == 10 and got["cost_usd"] == 0.001
