"""The arena's SQLite store: submissions, review runs, stage results keyed by input hash, judge calls.

Stage results are keyed by a hash of everything the stage read, so a crashed review resumes where it
stopped and an unchanged rerun replays instead of recomputing (or re-paying for judge calls). Every write
is one transaction; WAL lets ``review board`` read while a review writes.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
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
    # v2: partial runs and aborted runs are told apart; the last complete review of each submission is what
    # boards, points and the leaderboard are made of (a partial run never replaces it)
    """
    ALTER TABLE review_runs ADD COLUMN pid INTEGER;
    ALTER TABLE review_runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'complete';
    CREATE TABLE complete_reviews (
        submission_id TEXT PRIMARY KEY, agent TEXT NOT NULL, board TEXT, submitted_at TEXT, run_id INTEGER NOT NULL,
        flagged INTEGER NOT NULL, flags TEXT NOT NULL, scores TEXT NOT NULL, outcome TEXT NOT NULL,
        benchmark TEXT, points TEXT, updated_at TEXT NOT NULL
    );
    INSERT INTO complete_reviews
        SELECT p.submission_id, p.agent, p.board, s.submitted_at, p.run_id, json_extract(p.payload, '$.flagged'),
               '[]', '{}', '', NULL, p.payload, p.updated_at
        FROM points p LEFT JOIN submissions s ON s.id = p.submission_id;
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


class ReviewRecord(BaseModel):
    """The last complete review of a submission, as boards and points read it."""

    submission_id: str
    agent: str
    board: str | None
    submitted_at: datetime | None
    run_id: int
    flagged: bool
    flags: list[str]
    scores: dict[str, float | None]
    outcome: str
    benchmark: str | None  # BenchmarkData JSON (reviewbench.stages.benchmark), when the board benchmark ran
    points: str | None  # PointsData JSON


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=30, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._set_wal()
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._migrate()

    def _set_wal(self, patience_s: float = 30.0) -> None:
        """Switch to WAL, waiting out other processes doing the same.

        SQLite answers a journal-mode change that meets another connection's lock with "database is locked" at
        once, without calling the busy handler (seen when several reviews of one arena open a new store together),
        so the switch is retried here. WAL is stored in the file: once one process has set it, the rest find it."""
        deadline = time.monotonic() + patience_s
        delay = 0.01
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

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
                # another process (a second review of the same arena) may have migrated while this one waited
                if db.execute("PRAGMA user_version").fetchone()[0] > v:
                    continue
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

    def start_run(self, sub_id: str, content_hash: str, partial: bool = False) -> int:
        self.mark_aborted()
        with self.transaction() as db:
            cur = db.execute("INSERT INTO review_runs (submission_id, content_hash, started_at, status, pid, kind)"
                             " VALUES (?,?,?,'running',?,?)",
                             (sub_id, content_hash, _now(), os.getpid(), "partial" if partial else "complete"))
            return int(cur.lastrowid or 0)

    def mark_aborted(self) -> int:
        """Runs left 'running' by a process that no longer exists (killed, crashed) become 'aborted'."""
        rows = self._db.execute("SELECT run_id, pid FROM review_runs WHERE status='running'").fetchall()
        dead = [r["run_id"] for r in rows if r["pid"] != os.getpid() and not _pid_alive(r["pid"])]
        if dead:
            with self.transaction() as db:
                db.executemany("UPDATE review_runs SET status='aborted', finished_at=? WHERE run_id=?",
                               [(_now(), run_id) for run_id in dead])
        return len(dead)

    def finish_run(self, run_id: int, status: str, report_dir: Path | None) -> None:
        with self.transaction() as db:
            db.execute("UPDATE review_runs SET finished_at=?, status=?, report_dir=? WHERE run_id=?",
                       (_now(), status, str(report_dir) if report_dir else None, run_id))

    def runs(self, sub_id: str | None = None) -> list[dict[str, Any]]:
        q, args = "SELECT * FROM review_runs", tuple[str, ...]()
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

    # --- complete reviews: what boards, points and the leaderboard are made of -----------------------------
    def put_complete(self, rec: ReviewRecord) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO complete_reviews VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                       (rec.submission_id, rec.agent, rec.board,
                        rec.submitted_at.isoformat() if rec.submitted_at else None, rec.run_id, int(rec.flagged),
                        json.dumps(rec.flags), json.dumps(rec.scores, sort_keys=True), rec.outcome, rec.benchmark,
                        rec.points, _now()))

    def complete_reviews(self, board: str | None = None) -> list[ReviewRecord]:
        q, args = "SELECT * FROM complete_reviews", tuple[str, ...]()
        if board is not None:
            q, args = q + " WHERE board=?", (board,)
        out = []
        for r in self._db.execute(q + " ORDER BY submission_id", args):
            out.append(ReviewRecord(submission_id=r["submission_id"], agent=r["agent"], board=r["board"],
                                    submitted_at=datetime.fromisoformat(r["submitted_at"]) if r["submitted_at"] else None,
                                    run_id=r["run_id"], flagged=bool(r["flagged"]), flags=json.loads(r["flags"]),
                                    scores=json.loads(r["scores"]), outcome=r["outcome"], benchmark=r["benchmark"],
                                    points=r["points"]))
        return out

    def board_results(self, board: str) -> list[ReviewRecord]:
        return [r for r in self.complete_reviews(board) if r.benchmark is not None]

    def all_points(self) -> list[dict[str, Any]]:
        return [json.loads(r.points) for r in self.complete_reviews() if r.points is not None]
