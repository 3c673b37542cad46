"""Issue 23: a Builds-on entry that names a work and what it gives ("X (Li et al., 2024) for the window's attention")
states use, whatever else the sentence holds (a later clause saying a token is "among the important ones" is no
"X is among related works"). Mentions elsewhere, lists of examples and contrasts stay no credit. Sentences written
fresh for this test."""

from __future__ import annotations

import pytest

from reviewbench.evidence.priorart_evidence import credit
from reviewbench.priorart import load_index

PAPERS = {p.short_name: p for p in load_index().papers}


def _desc(builds_on: str, method: str = "- Window attention, ranked.") -> str:
    return f"# Lattice\n\n## Idea\nA ranking.\n\n## Method summary\n{method}\n\n## Builds on\n{builds_on}\n"


@pytest.mark.parametrize("entry, paper", [
    ("H2O (Zhang et al., 2023) for the running sum, and TOVA (Oren et al., 2024) for how often a token is among "
     "the most attended ones.", "TOVA"),
    ("H2O (Zhang et al., 2023) for the running sum, and TOVA (Oren et al., 2024) for how often a token is among "
     "the most attended ones.", "H2O"),
    ("SnapKV: the pooled window score, unchanged.", "SnapKV"),
])
def test_a_builds_on_entry_stating_what_the_work_gives_is_credit(entry: str, paper: str) -> None:
    assert credit(_desc(entry), PAPERS[paper]).credited


@pytest.mark.parametrize("desc, paper", [
    (_desc("Related methods include TOVA and H2O, among others."), "TOVA"),
    (_desc("Our own design.", "- Unlike TOVA (Oren et al., 2024) for the last token, we read every row."), "TOVA"),
])
def test_lists_of_examples_and_contrasts_stay_no_credit(desc: str, paper: str) -> None:
    assert not credit(desc, PAPERS[paper]).credited
