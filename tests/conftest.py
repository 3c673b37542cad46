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


def board_chains(arena: Path, order: list[str], lanes: int = 2) -> list[list[str]]:
    """``order`` split into ``lanes`` chains of whole boards, each chain in submission order. What one review reads
    of another — the board's best before it, the first-on-board bonus, the board's entries the judges see — is
    its own board's; the evidence reads the earlier submissions' folders, which are all there from the start. So
    boards may be reviewed side by side, each in submission order (the store takes concurrent writers)."""
    from reviewbench.bundle import load_bundle

    boards: dict[str, list[str]] = {}
    for sub in order:
        boards.setdefault(str(load_bundle(arena / "submit" / sub).board), []).append(sub)
    chains: list[list[str]] = [[] for _ in range(lanes)]
    for subs in sorted(boards.values(), key=len, reverse=True):  # longest board first, into the shortest chain
        min(chains, key=len).extend(subs)
    return [c for c in chains if c]


@pytest.fixture(scope="session")
def reviewed_arena(tmp_path_factory: pytest.TempPathFactory, shared_benchmark: Path) -> Path:
    """The example arena (one item per board) with all eight submissions reviewed once by the real CLI, each board
    in submission order (two boards at a time: :func:`board_chains`): what the tests of reports, boards and the
    agents' view read (read-only: copy it to change it)."""
    from concurrent.futures import ThreadPoolExecutor

    dst = _arena_copy(tmp_path_factory.mktemp("reviewed") / "arena", shared_benchmark)

    def chain(subs: list[str]) -> list[tuple[str, subprocess.CompletedProcess]]:
        return [(sub, run_review(f"submit/{sub}", cwd=dst, timeout=1800)) for sub in subs]

    with ThreadPoolExecutor(2) as pool:
        done = [r for c in pool.map(chain, board_chains(dst, SUBMISSION_ORDER)) for r in c]
    for sub, r in done:
        assert r.returncode == 0, (sub, r.stderr[-3000:])
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
