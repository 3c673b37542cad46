"""``review arena run``: every pending submission of an arena reviewed, in submission order, resumably.

**Pending** means: no complete review of the submission's current content (new, or changed since), or a
complete review older than the last complete review of a submission before it on the same board — its points
and the judges' view of the board were computed without that result, so it is reviewed again (its stored
stages replay; its judges are asked again only if what they read of the board changed).

**Order.** Judges, verdict and points read the complete results of the submissions before it (the board's best
before it, the first-on-board bonus, the board entries the judges compare with), so they run one submission at
a time in submission order (``submitted_at``, then id; submissions without a time last), each after the one
before it is complete. The stages before them — bundle, audit, evidence, the claim ledger, the board benchmark:
everything expensive about the harness — read nothing of other submissions' results, so with Ray they run
ahead, ``parallel`` submissions at a time, their harness workers spread over the cluster; the full review of
each submission then replays them from the store. Stage results are stored as they finish, so a killed run
continues where it stopped.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from reviewbench.arena import Arena
from reviewbench.errors import BundleError, UserError

#: Held by every stage but those that mostly wait for harness workers (``Stage.waits_on_workers``): the others do
#: their work in this process, one at a time, as the libraries they load are not safe to import from two threads
#: at once (two first imports of transformers' lazy modules raced: "cannot import name 'AutoModel'").
_DRIVER = threading.Lock()

State = Literal["new", "changed", "stale", "up to date", "refused"]


@dataclass
class Planned:
    id: str
    path: Path
    board: str | None
    submitted_at: datetime | None
    state: State
    reason: str

    @property
    def todo(self) -> bool:
        return self.state in ("new", "changed", "stale")


@dataclass
class Outcome:
    id: str
    status: Literal["complete", "refused", "failed"]
    detail: str  # the review's outcome line, or why there is none
    report_dir: Path | None = None
    judges_failed: bool = False
    seconds: float = 0.0


class Listener:
    """What a display hears; every method may be called from several threads at once."""

    def activity(self, sub_id: str, text: str) -> None:
        """What a submission is doing now (a stage, a harness item)."""

    def finished(self, outcome: Outcome) -> None:
        """A submission's review ended (complete, refused or failed)."""


def _order(p: Planned) -> tuple[bool, datetime, str]:
    return (p.submitted_at is None, p.submitted_at or datetime.min.replace(tzinfo=timezone.utc), p.id)


def plan(arena: Arena) -> list[Planned]:
    """Every submission of the arena in submission order, with what ``review arena run`` will do with it."""
    from reviewbench.bundle import load_submission
    from reviewbench.store import Store

    subs: list[tuple[Planned, str | None]] = []
    for sub_id in arena.submission_ids():
        path = arena.submit_dir / sub_id
        try:
            b = load_submission(arena, path)
        except UserError as e:
            subs.append((Planned(sub_id, path, None, None, "refused", e.message), None))
            continue
        except (RecursionError, MemoryError, OSError, ValueError) as e:
            subs.append((Planned(sub_id, path, None, None, "refused", type(e).__name__), None))
            continue
        subs.append((Planned(sub_id, path, b.board, b.submitted_at, "new", "never reviewed completely"),
                     b.content_hash))
    subs.sort(key=lambda s: _order(s[0]))
    complete: dict[str, tuple[int, str]] = {}
    if arena.store_path.exists():
        with Store(arena.store_path) as store:
            content = {r["run_id"]: r["content_hash"] for r in store.runs()}
            complete = {r.submission_id: (r.run_id, content.get(r.run_id, "")) for r in store.complete_reviews()}
    first_todo: dict[str, str] = {}  # board -> the first submission on it reviewed in this run
    newest: dict[str, tuple[int, str]] = {}  # board -> (run id, submission) of the newest complete review so far
    for p, content_hash in subs:
        if p.state == "refused":
            continue
        done = complete.get(p.id)
        if done is not None and done[1] == content_hash:
            p.state, p.reason = "up to date", f"complete review (run {done[0]}) of its current content"
            if p.board in first_todo:
                p.state, p.reason = "stale", f"{first_todo[p.board]}, before it on board {p.board}, is reviewed again"
            elif p.board in newest and newest[p.board][0] > done[0]:
                p.state, p.reason = "stale", (f"{newest[p.board][1]}, before it on board {p.board}, was reviewed "
                                              "after it")
        elif done is not None:
            p.state, p.reason = "changed", "its content changed since its last complete review"
        if p.board is None or arena.config.board(p.board) is None:
            continue
        if p.todo:
            first_todo.setdefault(p.board, p.id)
        elif done is not None and done[0] > newest.get(p.board, (0, ""))[0]:
            newest[p.board] = (done[0], p.id)
    return [p for p, _ in subs]


def check_boards(arena: Arena, todo: list[Planned]) -> None:
    """What ``review`` checks before a review, once per board up front: a broken bars file or a missing test
    split stops the run before any work (one line naming the file)."""
    from reviewbench.bars import load_bars
    from reviewbench.benchmark import split_manifest
    from reviewbench.review import arena_rubric

    rubric = arena_rubric(arena)
    rubric.rule_set(arena.config.points.rule_set)
    for name in sorted({p.board for p in todo if p.board}):
        board = arena.config.board(name)
        if board is not None:
            load_bars(arena, board)
            split_manifest(arena, board)


def one_at_a_time(stages: tuple[Any, ...]) -> tuple[Any, ...]:
    """``stages`` with every stage but those that wait on workers run under one lock (the run function is no part
    of a stage's input hash: the stored results are the same)."""
    def locked(run: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def run_locked(ctx: Any) -> Any:
            with _DRIVER:
                return run(ctx)
        return run_locked

    return tuple(s if s.waits_on_workers else replace(s, run=locked(s.run)) for s in stages)


def run_ahead(arena: Arena, p: Planned, listener: Listener, executor: Any = None) -> None:
    """The stages of one submission that read no other submission's results (``reviewbench.stages.ahead``), their results stored for its review to replay. Opened by
    :func:`reviewbench.review.open_review`, as its review will be (same inputs, same input hashes); nothing
    else is written."""
    from reviewbench.pipeline import run_stages
    from reviewbench.review import open_review
    from reviewbench.stages import STAGES, ahead
    from reviewbench.store import Store

    titles = {s.name: s.title for s in STAGES}
    current = {"stage": ""}

    def progress(line: str) -> None:
        listener.activity(p.id, f"{current['stage']}: {line}")

    def on_start(stage: Any) -> None:
        current["stage"] = titles[stage.name]
        listener.activity(p.id, f"{titles[stage.name]} …")

    def on_stage(report: Any) -> None:
        if report.status == "failed":  # not stored: its review runs it again, in order
            listener.activity(p.id, f"{report.title} failed ahead (its review runs it again): {report.reason}")

    with Store(arena.store_path) as store:
        ctx = open_review(arena, p.path, executor, store=store, progress=progress)
        run_stages(one_at_a_time(STAGES), ctx, only=set(ahead()), on_start=on_start, on_stage=on_stage)


def review_one(arena: Arena, p: Planned, listener: Listener, executor: Any = None) -> Outcome:
    """The full review of one submission (its stages run ahead replay from the store)."""
    from reviewbench.review import review
    from reviewbench.stages import STAGES

    t0 = time.monotonic()
    current = {"stage": ""}

    def on_start(stage: Any) -> None:
        current["stage"] = stage.title
        listener.activity(p.id, f"{stage.title} …")

    def progress(line: str) -> None:
        listener.activity(p.id, f"{current['stage']}: {line}")

    try:
        report, out_dir = review(p.path, arena.root, on_start=on_start, progress=progress,
                                 stages=one_at_a_time(STAGES), executor=executor)
    except BundleError as e:
        return Outcome(p.id, "refused", e.one_line(), seconds=time.monotonic() - t0)
    judges = report.stage("judges")
    return Outcome(p.id, "complete", report.outcome, out_dir, judges is not None and judges.status == "failed",
                   time.monotonic() - t0)


class _Ahead:
    """Daemon threads that run the ahead stages of the planned submissions, in submission order, ``parallel``
    at a time (daemon: an interrupted run exits without waiting for them; what they stored is kept)."""

    def __init__(self, arena: Arena, todo: list[Planned], parallel: int, listener: Listener,
                 executor: Any = None) -> None:
        self.arena, self.listener, self.executor = arena, listener, executor
        self.futures: dict[str, Future[None]] = {p.id: Future() for p in todo}
        self.stop = threading.Event()
        self.jobs: queue.Queue[Planned] = queue.Queue()
        for p in todo:
            self.jobs.put(p)
        for _ in range(min(parallel, len(todo))):
            threading.Thread(target=self._work, daemon=True, name="reviewbench-ahead").start()

    def _work(self) -> None:
        while not self.stop.is_set():
            try:
                p = self.jobs.get_nowait()
            except queue.Empty:
                return
            fut = self.futures[p.id]
            try:
                run_ahead(self.arena, p, self.listener, self.executor)
                fut.set_result(None)
            except BaseException as e:  # noqa: BLE001 - its review meets the same problem and reports it
                self.listener.activity(p.id, f"running ahead failed ({type(e).__name__}: {e}); its review runs "
                                             "every stage in order")
                fut.set_exception(e)

    def wait(self, sub_id: str) -> None:
        self.futures[sub_id].exception()  # done either way; errors are the review's to report


def run_arena(arena: Arena, todo: list[Planned], parallel: int, listener: Listener,
              cancel: Callable[[], None] | None = None, executor: Any = None) -> list[Outcome]:
    """Review ``todo`` (planned, in submission order). Stops at the first review that fails outright: the
    submissions after it would be scored without its result (a refused bundle is not on any board, so the run
    goes on past it). ``cancel`` stops the harness runs in flight when the run is interrupted. ``executor``: where
    every harness run of the run goes (default: arena.toml's ``[harness] executor``), one for all its reviews."""
    import reviewbench.report  # noqa: F401  (the stages' and the report's modules imported here, before any thread)
    import reviewbench.stages  # noqa: F401
    from reviewbench.store import Store

    with Store(arena.store_path):  # created and migrated here: two threads migrating a new store at once collide
        pass
    if executor is None:
        from reviewbench.executor import executor_for

        executor = executor_for(arena.config.harness, config_file=arena.root / "arena.toml")
    ahead = _Ahead(arena, todo, parallel, listener, executor) if parallel > 1 and len(todo) > 1 else None
    outcomes: list[Outcome] = []
    try:
        for p in todo:
            if ahead is not None:
                ahead.wait(p.id)
            t0 = time.monotonic()
            try:
                outcome = review_one(arena, p, listener, executor)
            except UserError:
                raise  # the arena's own mistake (a config, a rubric): the same for every submission
            except Exception as e:  # noqa: BLE001 - stop here: every later review would read this one's result
                outcome = Outcome(p.id, "failed", " ".join(f"{type(e).__name__}: {e}".split())[:300],
                                  seconds=time.monotonic() - t0)
            outcomes.append(outcome)
            listener.finished(outcome)
            if outcome.status == "failed":
                break
    except BaseException:
        if ahead is not None:
            ahead.stop.set()
        if cancel is not None:
            cancel()
        raise
    if ahead is not None:
        ahead.stop.set()
    return outcomes
