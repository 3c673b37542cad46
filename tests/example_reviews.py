"""Example submissions reviewed in order by the real CLI, each in a subprocess: what ``tests/conftest.py``'s
``reviewed_arena`` runs in the background (``python -m tests.example_reviews ARENA SUB...``) and ``reviewed_all``
runs in place."""

import subprocess
import sys
from pathlib import Path


def review_all(arena: Path, subs: list[str]) -> str | None:
    """Reviews ``subs`` in order from ``arena``; the first failure's exit code and stderr tail, or None."""
    for sub in subs:
        r = subprocess.run([sys.executable, "-m", "reviewbench", f"submit/{sub}"], cwd=arena, capture_output=True,
                           text=True, timeout=1800)
        if r.returncode:
            return f"review of {sub} exited {r.returncode}: {r.stderr[-3000:]}"
    return None


if __name__ == "__main__":
    failure = review_all(Path(sys.argv[1]), sys.argv[2:])
    sys.exit(failure)
