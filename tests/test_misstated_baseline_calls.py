"""MISSTATED_METHOD from behaviour (issue 23): keeping a baseline's tokens proves a stated mechanism absent only where
that baseline's own code lacks it. A baseline that calls an operation able to compute the mechanism (Expected
Attention un-rotates its queries with ``view.rotate``, which the reader does not tag) proves nothing: the calibration
suite's blinded Expected Attention was flagged so through the full stages."""

from __future__ import annotations

from pathlib import Path

from reviewbench.evidence.behaviour import BehaviourMatch
from reviewbench.flags.misstated import misstated_flags

ROOT = Path(__file__).resolve().parent.parent

DESCRIPTION = """# Forecast scoring

## Idea
Score each key by the attention that the coming queries are expected to pay it.

## Method summary
We take the queries in their pre-rotation form, fit a Gaussian to them, average their rotary phase over the positions
still to come, and score keys by the softmax of the expected logit, weighted by each value's norm.
"""


def _same_as(baseline: str) -> list[BehaviourMatch]:
    return [BehaviourMatch(reference=f"baseline:{baseline}", member=baseline, jaccard=1.0, rank_corr=1.0,
                           jaccard_by_budget=[1.0], basis="kept sets", members_compared=7, source="bank")]


def test_keeping_the_tokens_of_a_baseline_that_rotates_proves_no_rotation_absent() -> None:
    src = (ROOT / "harness" / "methods" / "expected_attention.py").read_text()
    flags = misstated_flags(DESCRIPTION, src, _same_as("expected_attention"))
    assert all(f.strength == "indication" for f in flags), [f.explanation for f in flags]


def test_keeping_the_tokens_of_a_baseline_that_never_rotates_still_proves_it() -> None:
    src = (ROOT / "harness" / "methods" / "streaming.py").read_text()
    flags = misstated_flags(DESCRIPTION, src, _same_as("window"))
    assert any(f.strength == "proof" and "rotary" in f.explanation for f in flags), [f.explanation for f in flags]
