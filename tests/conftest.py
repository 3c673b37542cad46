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


@pytest.fixture
def arena(tmp_path: Path, shared_benchmark: Path) -> Path:
    """A private copy of the example arena, without any earlier reviews. Its boards measure one item of their test
    split (the example's bars, on the same split, still apply), so a full review takes a minute, not ten."""
    dst = tmp_path / "arena"
    shutil.copytree(EXAMPLE_ARENA, dst, ignore=shutil.ignore_patterns("reviews", "benchmark"))
    (dst / "reviews").mkdir()
    (dst / "data" / "benchmark").symlink_to(shared_benchmark)
    toml = dst / "arena.toml"
    toml.write_text(re.sub(r"(?m)^items = \d+$", "items = 1", toml.read_text()))
    return dst


def run_review(*args: str, cwd: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess: real exit codes, real stderr."""
    return subprocess.run([sys.executable, "-m", "reviewbench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def rubric():
    from reviewbench.rubric import RUBRICS_DIR, load_rubric

    return load_rubric(RUBRICS_DIR / "default.toml")
