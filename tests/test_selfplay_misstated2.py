"""Misstatement self-play, round 2 (issue 23): twenty more submissions written blind to the detector by a helper
(tests/selfplay_misstated2/, index.json says which is which). Misstated: entropy head budgets, a decayed memory across
calls, value norms, clustering, Gumbel noise, a least-squares mixing weight, a raised-cosine layer profile, one
selection for the layer's heads, a blend with the previous layer's scores, a second pass over candidates. Honest:
accurate descriptions full of negations, future work and hand-set tables. Before: 6 of 10 misstated proved, 1 of 10
honest "proved" (a future-work sentence whose subject is another work's gate); after: 8 and 0. Left: the least-squares
weight (honest methods fit a line by hand with sums the reader does not tell apart from any score, sets 5 and 23),
and the layer profile, which a hook returning equal budgets hides from the words: the measured allocation proves
it where the benchmark runs (tested below). Not held out; the fresh cases below check each change on its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewbench.evidence.behaviour import Allocation
from reviewbench.evidence.stated import mentions, stated
from reviewbench.flags.misstated import misstated_flags

ROOT = Path(__file__).parent / "selfplay_misstated2"
INDEX = {e["id"]: e for e in json.loads((ROOT / "index.json").read_text())}
MEASURED_ONLY = {"m13"}  # a layer profile stated, a budget hook returning equal budgets: the allocation proves it
LEFT = {"m10": "a least-squares weight: a regression by hand reads as sums any score computes"}


def _flags(key: str, allocation=()):
    b = ROOT / key
    return misstated_flags((b / "DESCRIPTION.md").read_text(), (b / "method.py").read_text(), allocation=allocation)


@pytest.mark.parametrize("key", [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=LEFT[k]))
                                 if k in LEFT else k for k in sorted(INDEX)])
def test_misstated_ones_are_proved_and_honest_ones_are_not(key: str) -> None:
    proofs = [f for f in _flags(key) if f.strength == "proof"]
    if INDEX[key]["kind"] == "honest":
        assert not proofs, [f.explanation for f in proofs]
    elif key in MEASURED_ONLY:
        assert not proofs
    else:
        assert proofs, INDEX[key]["claim"]


def _alloc(uneven: int) -> Allocation:
    return Allocation(source="benchmark", head_views=40, head_uneven=uneven, layer_groups=40, layer_uneven=uneven,
                      summary="")


def test_a_budget_hook_that_hands_out_equal_budgets_is_caught_by_what_it_keeps() -> None:
    proofs = [f for f in _flags("m13", [_alloc(0)]) if f.strength == "proof"]
    assert proofs and "shows no variation" in proofs[0].explanation
    assert not _flags("m13", [_alloc(12)])  # the layers do keep different numbers: nothing to say


_HOOKED = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class M(EvictionMethod):
    name = "m"
    query_window = 8

    def layer_budgets(self, mean_budget, n_tokens, model):
        n = len(model.attention_layers)
        return [int(mean_budget * (0.5 + i / max(1, n - 1))) for i in range(n)]

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(view.group(view.attention().sum(1), "mean"), view.budget, view.valid)
'''


def test_a_stated_profile_over_depth_is_read_and_only_a_measurement_proves_it_absent() -> None:
    desc = ("# Ramp\n\n## Method summary\nThe cache is spread along depth with a linear ramp: the last layer gets up to "
            "1.5 times the mean budget and the first half of it.\n")
    assert not misstated_flags(desc, _HOOKED)  # the hook computes budgets: words alone say nothing against it
    assert [f.strength for f in misstated_flags(desc, _HOOKED, allocation=[_alloc(0)])] == ["proof"]
    assert not misstated_flags(desc, _HOOKED, allocation=[_alloc(9)])


def _said(sentence: str, label: str) -> list[bool]:
    return [stated(sentence, m)[0] for m in mentions(sentence) if m.concept.label == label]


def test_a_mechanism_that_is_the_subject_of_a_would_is_not_stated() -> None:
    assert _said("A learned scorer that reads the hidden states, as some systems have, would remove the pass.",
                 "learned weights") == [False]
    # this method's own clause between the mention and the modal: stated
    assert _said("A learned scorer predicts the score; we would otherwise need the pass.", "learned weights") == [True]
    assert _said("The gate is a learned scorer that reads the hidden states, so it would be cheap.",
                 "learned weights") == [True]


def test_a_previous_attention_layer_s_scores_are_a_cross_layer_signal() -> None:
    s = "Each layer blends its scores with the preceding full-attention layer's ranking, half and half."
    assert _said(s, "cross-layer reuse") == [True]
    assert not _said("The preceding attention layer is not consulted.", "cross-layer reuse") or \
        _said("The preceding attention layer is not consulted.", "cross-layer reuse") == [False]


_PER_HEAD = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class M(EvictionMethod):
    name = "m"
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        BODY
'''


def test_one_selection_for_every_head_needs_scores_reduced_over_the_heads() -> None:
    desc = ("# Shared\n\n## Method summary\nWindow attention is pooled over the layer and all heads keep the same "
            "positions; the cache stays rectangular.\n")
    per_head = _PER_HEAD.replace("BODY", "return Keep.from_topk(view.group(view.attention().sum(1), 'mean'), "
                                 "view.budget, view.valid)")
    assert [f.strength for f in misstated_flags(desc, per_head)] == ["proof"]
    pooled = _PER_HEAD.replace("BODY", "s = view.attention().sum(1).mean(0, keepdim=True)\n        "
                               "return Keep.from_topk(s.expand(view.n_kv_heads, -1), view.budget, view.valid)")
    assert not [f for f in misstated_flags(desc, pooled) if f.strength == "proof"]
    # a rule by position alone keeps the same places for every head without reducing anything
    lattice = _PER_HEAD.replace("BODY", "return Keep.from_topk(view.positions.float(), view.budget, view.valid)")
    assert not [f for f in misstated_flags(desc, lattice) if f.strength == "proof" and "one selection" in f.explanation]
    # the query heads of one KV head sharing its selection is what every method does: no claim about the layer
    group = ("# G\n\n## Method summary\nThe query heads of each KV head share the same selection; window attention "
             "ranks the tokens.\n")
    assert not misstated_flags(group, per_head)
