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
    for sub in subs:
        r = run_review(f"submit/{sub}", cwd=dst, timeout=1800)
        assert r.returncode == 0, (sub, r.stderr[-3000:])


@pytest.fixture(scope="session")
def reviewed_arena(tmp_path_factory: pytest.TempPathFactory, shared_benchmark: Path) -> Path:
    """The example arena (one item per board) with five of its eight submissions (``REVIEWED``) reviewed once, in
    submission order, by the real CLI: what the tests of reports, boards and the agents' view read (read-only:
    copy it to change it). One at a time: two reviews side by side on 2 cores were slower, not faster (board C's
    decode loop makes a sandbox round trip per token, and each waited for a busy core: 50 s became 270-300 s)."""
    dst = _arena_copy(tmp_path_factory.mktemp("reviewed") / "arena", shared_benchmark)
    _review_all(dst, REVIEWED)
    return dst


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
