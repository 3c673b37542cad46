from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_ARENA = ROOT / "examples" / "arena"


@pytest.fixture(scope="session")
def shared_benchmark(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One full-cache reference cache for every test arena copy (the references are keyed by split content, model
    and harness version, so copies of the example arena share them exactly as one arena's submissions do)."""
    return tmp_path_factory.mktemp("benchmark-cache")


def _arena_copy(dst: Path, shared_benchmark: Path) -> Path:
    shutil.copytree(EXAMPLE_ARENA, dst, ignore=shutil.ignore_patterns("reviews", "benchmark"))
    (dst / "reviews").mkdir()
    (dst / "data" / "benchmark").symlink_to(shared_benchmark)
    toml = dst / "arena.toml"
    text = re.sub(r"(?m)^items = \d+$", "items = 1", toml.read_text())
    # the offline default's advisors (SmolLM2, Gemma: ~2 min a review here) run only where a test asks for them
    toml.write_text(text.replace('rubric = "default"\n', 'rubric = "default"\noffline_advisors = false\n', 1))
    return dst


@pytest.fixture
def arena(tmp_path: Path, shared_benchmark: Path) -> Path:
    """A private copy of the example arena, without any earlier reviews. Its boards measure one item of their test
    split (the example's bars, on the same split, still apply) and the offline panel runs without its advisory
    LLMs, so a full review takes a minute, not ten."""
    return _arena_copy(tmp_path / "arena", shared_benchmark)


SUBMISSION_ORDER = ["agent1-001", "agent2-001", "agent1-002", "agent2-002", "agent2-003", "agent1-003", "agent2-004",
                    "agent1-004"]
# What `make test` reviews (in submission order): every board with a submission, a first and a later submission on
# A and C, the audit's planted violation (agent2-002, agent1-003); the other three follow in `reviewed_all` (heavy).
REVIEWED = ["agent1-001", "agent1-002", "agent2-002", "agent2-003", "agent1-003"]


def _review_all(dst: Path, subs: list[str]) -> None:
    from tests.example_reviews import review_all

    failure = review_all(dst, subs)
    assert failure is None, failure


# Two pieces of work spend minutes mostly on one core or waiting: the five example reviews that ``reviewed_arena``
# returns (a review is one process at a time: the benchmark's calls, then the evidence) and the sandbox attacks of
# ``tests/test_sandbox.py`` (hangs waiting out their time limits). They run one after the other in the background
# from the first test on, and the modules that read them (or share the example's full-cache references) run last,
# each whole so that no module fixture is built twice: the other core runs the rest of the suite meanwhile.
_LATE_FIXTURES = {"arena", "shared_benchmark", "reviewed_arena", "reviewed_copy", "reviewed_all", "attacked"}
_REVIEWS_READ = {"reviewed_arena", "reviewed_copy", "reviewed_all"}


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    late = {it.module.__name__ for it in items if _LATE_FIXTURES & set(getattr(it, "fixturenames", ()))
            and getattr(it, "module", None) is not None}
    items.sort(key=lambda it: getattr(getattr(it, "module", None), "__name__", "") in late)  # stable: order kept


class _Background:
    """Programs run one after another in a thread of the test session, each in its own process group with its
    output in a log; ``wait(name)`` blocks until that one ended and fails with its log's tail unless it passed."""

    def __init__(self, jobs: list[tuple[str, list[str], Path, Path]]) -> None:
        import threading

        self.jobs = {name: (argv, cwd, out) for name, argv, cwd, out in jobs}
        self.done = {name: threading.Event() for name in self.jobs}
        self.rc: dict[str, int] = {}
        self.proc: subprocess.Popen | None = None
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _log(self, name: str) -> Path:
        return self.jobs[name][2].with_name(self.jobs[name][2].name + ".log")

    def _run(self) -> None:
        for name, (argv, cwd, _) in self.jobs.items():
            if not self.stopping:
                with open(self._log(name), "w") as log:
                    self.proc = subprocess.Popen(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                                 start_new_session=True)
                    self.rc[name] = self.proc.wait()
            self.done[name].set()

    def wait(self, name: str) -> Path:
        assert self.done[name].wait(timeout=3600), f"{name}: still running after an hour"
        assert self.rc.get(name) == 0, f"{name} failed: " + self._log(name).read_text()[-3000:]
        return self.jobs[name][2]

    def stop(self) -> None:
        import os
        import signal

        self.stopping = True
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its children (sandboxed workers) with it
        self.thread.join(timeout=60)


@pytest.fixture(scope="session", autouse=True)
def _background(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Starts, with the first test, the background work the selected tests read (the shared references asked for
    only then: an autouse fixture's own fixtures would be every test's)."""
    wanted = set().union(*(set(getattr(it, "fixturenames", ())) for it in request.session.items))
    jobs: list[tuple[str, list[str], Path, Path]] = []
    if wanted & _REVIEWS_READ:
        dst = _arena_copy(tmp_path_factory.mktemp("reviewed") / "arena", request.getfixturevalue("shared_benchmark"))
        jobs.append(("reviews", [sys.executable, "-m", "tests.example_reviews", str(dst), *REVIEWED], ROOT, dst))
    if "attacked" in wanted:
        out = tmp_path_factory.mktemp("attacks")
        jobs.append(("attacks", [sys.executable, "-m", "tests.sandbox_attacks", str(out)], ROOT, out))
    bg = _Background(jobs)
    try:
        yield bg
    finally:
        bg.stop()


@pytest.fixture(scope="session")
def reviewed_arena(_background: _Background) -> Path:
    """The example arena (one item per board) with five of its eight submissions (``REVIEWED``) reviewed once, in
    submission order, by the real CLI: what the tests of reports, boards and the agents' view read (read-only:
    copy it to change it). The reviews run one after another, in the background from the first test on."""
    return _background.wait("reviews")


@pytest.fixture(scope="session")
def reviewed_all(tmp_path_factory: pytest.TempPathFactory, reviewed_arena: Path) -> Path:
    """All eight reviewed: a copy of ``reviewed_arena`` with the other three reviewed after it. Each of them is the
    newest on its board when reviewed, so this equals reviewing the eight in order."""
    dst = tmp_path_factory.mktemp("reviewed-all") / "arena"
    shutil.copytree(reviewed_arena, dst, symlinks=True)
    _review_all(dst, [s for s in SUBMISSION_ORDER if s not in REVIEWED])
    return dst


@pytest.fixture
def reviewed_copy(tmp_path: Path, reviewed_arena: Path) -> Path:
    """A private copy of the reviewed arena (its store too: a rerun replays what is unchanged)."""
    dst = tmp_path / "arena"
    shutil.copytree(reviewed_arena, dst, symlinks=True)
    return dst


def run_review(*args: str, cwd: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess: real exit codes, real stderr."""
    return subprocess.run([sys.executable, "-m", "reviewbench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def rubric():
    from reviewbench.rubric import RUBRICS_DIR, load_rubric

    return load_rubric(RUBRICS_DIR / "default.toml")
