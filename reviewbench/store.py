"""The arena's SQLite store: submissions, review runs, stage results keyed by input hash, judge calls.

Stage results are keyed by a hash of everything the stage read, so a crashed review resumes where it
stopped and an unchanged rerun replays instead of recomputing (or re-paying for judge calls). Every write
is one transaction; WAL lets ``review board`` read while a review writes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from reviewbench.errors import UserError

MIGRATIONS: list[str] = [
    # v1
    """
    CREATE TABLE submissions (
        id TEXT PRIMARY KEY, agent TEXT NOT NULL, board TEXT, submitted_at TEXT,
        content_hash TEXT NOT NULL, path TEXT NOT NULL, updated_at TEXT NOT NULL
    );
    CREATE TABLE review_runs (
        run_id INTEGER PRIMARY KEY AUTOINCREMENT, submission_id TEXT NOT NULL, content_hash TEXT NOT NULL,
        started_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL, report_dir TEXT
    );
    CREATE TABLE stage_results (
        stage TEXT NOT NULL, input_hash TEXT NOT NULL, submission_id TEXT NOT NULL, status TEXT NOT NULL,
        output_hash TEXT NOT NULL, payload TEXT NOT NULL, seconds REAL NOT NULL, created_at TEXT NOT NULL,
        PRIMARY KEY (stage, input_hash)
    );
    CREATE INDEX stage_results_by_submission ON stage_results (submission_id, stage);
    CREATE TABLE judge_calls (
        request_hash TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL, request TEXT NOT NULL,
        response TEXT NOT NULL, input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
        cost_usd REAL NOT NULL DEFAULT 0, created_at TEXT NOT NULL
    );
    CREATE TABLE points (
        submission_id TEXT PRIMARY KEY, agent TEXT NOT NULL, board TEXT, payload TEXT NOT NULL,
        run_id INTEGER NOT NULL, updated_at TEXT NOT NULL
    );
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class StoredStage(BaseModel):
    stage: str
    input_hash: str
    status: str
    output_hash: str
    payload: dict[str, Any]
    seconds: float
    created_at: str


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=30, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._migrate()

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise UserError(self.path, f"store schema v{version} is newer than this reviewbench (v{SCHEMA_VERSION})")
        for v in range(version, SCHEMA_VERSION):
            with self.transaction() as db:
                for stmt in MIGRATIONS[v].split(";"):
                    if stmt.strip():
                        db.execute(stmt)
                db.execute(f"PRAGMA user_version = {v + 1}")

    @property
    def schema_version(self) -> int:
        return self._db.execute("PRAGMA user_version").fetchone()[0]

    # --- submissions and runs ------------------------------------------------------------------------------
    def upsert_submission(self, sub_id: str, agent: str, board: str | None, submitted_at: datetime | None,
                          content_hash: str, path: Path) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO submissions VALUES (?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET agent=excluded.agent,"
                " board=excluded.board, submitted_at=excluded.submitted_at, content_hash=excluded.content_hash,"
                " path=excluded.path, updated_at=excluded.updated_at",
                (sub_id, agent, board, submitted_at.isoformat() if submitted_at else None, content_hash, str(path),
                 _now()),
            )

    def start_run(self, sub_id: str, content_hash: str) -> int:
        with self.transaction() as db:
            cur = db.execute("INSERT INTO review_runs (submission_id, content_hash, started_at, status)"
                             " VALUES (?,?,?,'running')", (sub_id, content_hash, _now()))
            return int(cur.lastrowid)

    def finish_run(self, run_id: int, status: str, report_dir: Path | None) -> None:
        with self.transaction() as db:
            db.execute("UPDATE review_runs SET finished_at=?, status=?, report_dir=? WHERE run_id=?",
                       (_now(), status, str(report_dir) if report_dir else None, run_id))

    def runs(self, sub_id: str | None = None) -> list[dict[str, Any]]:
        q, args = "SELECT * FROM review_runs", ()
        if sub_id:
            q, args = q + " WHERE submission_id=?", (sub_id,)
        return [dict(r) for r in self._db.execute(q + " ORDER BY run_id", args)]

    # --- stage results -------------------------------------------------------------------------------------
    def get_stage(self, stage: str, input_hash: str) -> StoredStage | None:
        row = self._db.execute("SELECT * FROM stage_results WHERE stage=? AND input_hash=?",
                               (stage, input_hash)).fetchone()
        if row is None:
            return None
        return StoredStage(stage=row["stage"], input_hash=row["input_hash"], status=row["status"],
                           output_hash=row["output_hash"], payload=json.loads(row["payload"]),
                           seconds=row["seconds"], created_at=row["created_at"])

    def put_stage(self, sub_id: str, stored: StoredStage) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO stage_results VALUES (?,?,?,?,?,?,?,?)",
                       (stored.stage, stored.input_hash, sub_id, stored.status, stored.output_hash,
                        json.dumps(stored.payload, sort_keys=True), stored.seconds, stored.created_at))

    def latest_stage(self, sub_id: str, stage: str) -> StoredStage | None:
        row = self._db.execute("SELECT stage, input_hash FROM stage_results WHERE submission_id=? AND stage=?"
                               " ORDER BY created_at DESC, rowid DESC LIMIT 1", (sub_id, stage)).fetchone()
        return self.get_stage(row["stage"], row["input_hash"]) if row else None

    # --- judge calls (used by the judges stage: request hash -> response) ----------------------------------
    def get_judge_call(self, request_hash: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT * FROM judge_calls WHERE request_hash=?", (request_hash,)).fetchone()
        if row is None:
            return None
        out = dict(row)
        out["request"], out["response"] = json.loads(out["request"]), json.loads(out["response"])
        return out

    def put_judge_call(self, request_hash: str, provider: str, model: str, request: Any, response: Any,
                       input_tokens: int = 0, output_tokens: int = 0, cost_usd: float = 0.0) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO judge_calls VALUES (?,?,?,?,?,?,?,?,?)",
                       (request_hash, provider, model, json.dumps(request, sort_keys=True),
                        json.dumps(response, sort_keys=True), input_tokens, output_tokens, cost_usd, _now()))

    # --- points --------------------------------------------------------------------------------------------
    def put_points(self, sub_id: str, agent: str, board: str | None, payload: dict[str, Any], run_id: int) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO points VALUES (?,?,?,?,?,?)",
                       (sub_id, agent, board, json.dumps(payload, sort_keys=True), run_id, _now()))

    def all_points(self) -> list[dict[str, Any]]:
        return [json.loads(r["payload"]) for r in self._db.execute("SELECT payload FROM points ORDER BY submission_id")]
