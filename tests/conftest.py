from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_ARENA = ROOT / "examples" / "arena"


@pytest.fixture
def arena(tmp_path: Path) -> Path:
    """A private copy of the example arena, without any earlier reviews."""
    dst = tmp_path / "arena"
    shutil.copytree(EXAMPLE_ARENA, dst, ignore=shutil.ignore_patterns("reviews"))
    (dst / "reviews").mkdir()
    return dst


def run_review(*args: str, cwd: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess: real exit codes, real stderr."""
    return subprocess.run([sys.executable, "-m", "reviewbench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def rubric():
    from reviewbench.rubric import RUBRICS_DIR, load_rubric

    return load_rubric(RUBRICS_DIR / "default.toml")
