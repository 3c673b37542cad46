"""Issue 23: the static review of the precision and self-play rounds (tests/data/rounds, written by helpers blind to
the detection code): honest methods stand unflagged with novelty in [1, 3], disguised ports are flagged with novelty
at most 1. The exceptions are listed with why in tests/data/rounds/README.md; a change that moves any bundle fails
here, so a reader change is weighed on code nobody on the project wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewbench.calibrate.static import static_review

ROUNDS = Path(__file__).resolve().parent / "data" / "rounds"
HONEST = sorted(p for p in (ROUNDS / "honest").iterdir() if p.is_dir())
PORTS = sorted(p for p in (ROUNDS / "ports").iterdir() if p.is_dir())
# read as Scissorhands' persistence test: a remembered percentile above a bar adding a margin (see the README)
HONEST_FLAGGED = {"a08"}
# none since CAOTE's renormalisation by 1 - a is read (p02, see the README)
PORTS_OPEN: set[str] = set()


def test_the_rounds_hold_what_the_readme_says():
    assert len(HONEST) == 20 and len(PORTS) == 12
    assert HONEST_FLAGGED <= {p.name for p in HONEST} and PORTS_OPEN <= {p.name for p in PORTS}


@pytest.mark.parametrize("folder", HONEST, ids=lambda p: p.name)
def test_honest_methods_of_the_precision_round(folder: Path):
    r = static_review(folder)
    if folder.name in HONEST_FLAGGED:
        assert r.flags == ["UNDISCLOSED_PRIOR_ART"], r
    else:
        assert r.flags == [], r
    assert 1 <= r.novelty <= 3, r


@pytest.mark.parametrize("folder", PORTS, ids=lambda p: p.name)
def test_disguised_ports_of_the_self_play_round(folder: Path):
    r = static_review(folder)
    if folder.name in PORTS_OPEN:
        assert r.flags == [] and r.novelty == 2, r
    else:
        assert "UNDISCLOSED_PRIOR_ART" in r.flags and r.novelty <= 1, r
