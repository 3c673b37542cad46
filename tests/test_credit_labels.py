"""Issue 23, item 6: a labelled source ("Source: X (...)") and a title that calls the description a port of X are
attribution (set 24's two credited ports were read as mere mentions); a label that is no source, a title that only
names X, or a related-work line are not. Every sentence here is written for this test."""

from __future__ import annotations

import pytest

from reviewbench.evidence.priorart_evidence import credit
from reviewbench.priorart import load_index

BODY = "\n\n## Method summary\n- One score per token, top-k kept.\n\n## Limitations\nOne model only.\n"


@pytest.mark.parametrize(("text", "paper"), [
    ("# Decay clock\n\nSource: H2O (Zhang et al., 2023, arXiv 2306.14048); written from the paper.", "H2O"),
    ("# Decay clock\n\n**Original method:** TOVA (Oren et al., 2024).", "TOVA"),
    ("# TOVA port (board C)\n\nThe last query's attention, averaged over heads.", "TOVA"),
    ("# Port of SnapKV to board B_online\n\nThe closing rows stand in for the question.", "SnapKV"),
    ("# H2O reimplementation\n\nHeavy hitters plus a recent window.", "H2O"),
])
def test_a_labelled_source_or_a_port_title_is_credit(text: str, paper: str) -> None:
    assert credit(text + BODY, load_index().by_name(paper)).credited


@pytest.mark.parametrize(("text", "paper"), [
    ("# Decay clock\n\nOpen question: whether H2O would gain from a second clock.", "H2O"),
    ("# A faster TOVA\n\nOur score reads two queries, not one.", "TOVA"),
    ("# Decay clock\n\nRelated: SnapKV, PyramidKV.", "SnapKV"),
    ("# Decay clock\n\nSource: our own measurements on RULER; SnapKV is the baseline we compare with.", "SnapKV"),
])
def test_other_labels_and_titles_are_no_credit(text: str, paper: str) -> None:
    assert not credit(text + BODY, load_index().by_name(paper)).credited
