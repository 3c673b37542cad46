"""Misstatement self-play (issue 23): twenty submissions written blind to the detector by a helper
(tests/selfplay_misstated/, index.json says which is which): ten whose Method summary states a mechanism the code does
not compute (fitted weights, a query probe, absorbed tokens, a decay half-life, entropy budgets, clustering, value
norms, tapered layer budgets, a similarity penalty, Plackett-Luce sampling) and ten honest ones whose descriptions
are accurate but full of what is not a claim (negated lists, other works, future work, "Without queries, ..."
fallbacks, `query_window = 0`). Before: 7 of 10 misstated proved (three of them on the wrong sentence), 3 of 10
honest "proved" misstated; after: 9 and 0 (the tapered layer budgets stay an indication offline: the measured
allocation proves them where the benchmark runs). Not held out: the phrasings and the parser's fixes were made
looking at these; the fresh cases below check each mechanism on its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewbench.evidence.stated import mentions, stated
from reviewbench.flags.misstated import misstated_flags

ROOT = Path(__file__).parent / "selfplay_misstated"
INDEX = {e["id"]: e for e in json.loads((ROOT / "index.json").read_text())}
# (m15, layer budgets said to taper, was an indication until set 36: code with no layer_budgets hook that never reads
# its layer keeps the one budget everywhere, a proof from the code alone)
OFFLINE_INDICATION: set[str] = set()


def _flags(key: str):
    b = ROOT / key
    return misstated_flags((b / "DESCRIPTION.md").read_text(), (b / "method.py").read_text())


@pytest.mark.parametrize("key", sorted(INDEX))
def test_misstated_ones_are_proved_and_honest_ones_are_not(key: str) -> None:
    proofs = [f for f in _flags(key) if f.strength == "proof"]
    if INDEX[key]["kind"] == "honest":
        assert not proofs, [f.explanation for f in proofs]
    elif key in OFFLINE_INDICATION:
        assert not proofs and _flags(key)
    else:
        assert proofs, INDEX[key]["claim"]


def _said(sentence: str, label: str) -> list[bool]:
    return [stated(sentence, m)[0] for m in mentions(sentence) if m.concept.label == label]


def test_a_negation_reaches_every_item_of_its_list() -> None:
    s = "We do not learn any weights, cluster the keys, merge evicted tokens, or adapt budgets across heads."
    assert _said(s, "clustering") == [False] and _said(s, "token merging") == [False]
    s = "It never reweights by value norms, clusters keys, nor merges tokens into their neighbours."
    assert _said(s, "token merging") == [False]
    # a list without a negation, or whose later item is a clause of its own, states each item
    s = "It drops the oldest tokens, merges evicted tokens into their nearest kept neighbour, and keeps sinks."
    assert _said(s, "token merging") == [True]
    s = "No weights are learned, we merge evicted tokens into their nearest kept neighbour, and keep sinks."
    assert _said(s, "token merging") == [True]


def test_a_parameter_set_to_zero_states_no_mechanism() -> None:
    assert _said("The method reads no queries (`query_window = 0`) and ranks keys by norm.", "a query window") == [False]
    assert all(_said("Scores come from `query_window = 32` recent queries.", "a query window"))


_CODE = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class M(EvictionMethod):
    name = "m"
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        BODY
'''
_BRANCHED = _CODE.replace("BODY", "if view.queries is None:\n            return Keep.from_topk(view.positions.float(), "
                          "view.budget, view.valid)\n        return Keep.from_topk(view.group(view.attention().sum(1), "
                          "'mean'), view.budget, view.valid)")
_PLAIN = _CODE.replace("BODY", "return Keep.from_topk(view.group(view.attention().sum(1), 'mean'), view.budget, "
                       "view.valid)")


def _desc(summary: str, extra: str = "") -> str:
    return (f"# Glance\n\n## Idea\n\nKeep what the closing rows read.\n\n## Method summary\n\n{summary}\n\n{extra}"
            "## Limitations\n\nNone known.\n")


def test_a_sentence_opening_without_queries_is_the_code_s_branch() -> None:
    summary = "Attention of the closing rows ranks the tokens. Without queries, the method keeps the newest tokens."
    assert not [f for f in misstated_flags(_desc(summary), _BRANCHED) if "reads no query" in f.explanation]
    # a denial of the score itself stands where the code's score reads the queries
    summary = "The score reads no queries at all: each token is ranked by how often it was seen."
    assert [f for f in misstated_flags(_desc(summary), _PLAIN) if f.strength == "proof"]


def test_the_author_s_own_sibling_sections_are_not_the_method_summary() -> None:
    claim = "A small learned scorer, trained offline on calibration prompts, weighs each token."
    inside = misstated_flags(_desc("Attention of the closing rows ranks the tokens. " + claim), _PLAIN)
    assert [f for f in inside if f.strength == "proof"]
    # under a heading of its own at the Method summary's level: read, but only for a judge to weigh
    sibling = misstated_flags(_desc("Attention of the closing rows ranks the tokens.",
                                    f"## Why it should work\n\n{claim}\n\n"), _PLAIN)
    assert sibling and not [f for f in sibling if f.strength == "proof"]
    # a deeper heading inside the Method summary is still the Method summary
    nested = misstated_flags(_desc("Attention of the closing rows ranks the tokens.\n\n### Details\n\n" + claim),
                             _PLAIN)
    assert [f for f in nested if f.strength == "proof"]
