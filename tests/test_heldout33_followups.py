"""Readings added after held-out set 33's key (not held out; every snippet written fresh for these tests, none a
bundle of the set), each with a neighbour that must read otherwise:

- a total of attention divided by how many queries see each key is a mean (ZipCache's normalised attention); the
  same total divided by a root, a logarithm or a power of that count (a damped count) is no mean: no rule that needs
  a count-normalised score reads it, and beside H2O's accumulation it is a term of its own (no H2O port).
"""

from __future__ import annotations

import pytest

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches

HEAD = "import torch\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
BARE = "# Method\n\n## Idea\nSomething.\n\n## Method summary\nA score.\n\n## Relation to prior work\nNone.\n"

MEAN = HEAD + '''class Tally(EvictionMethod):
    query_window = 1 << 16

    def select(self, view: LayerView) -> Keep:
        got = view.group(view.attention(reduce="sum"), "mean")
        n = got.shape[-1]
        lookers = torch.arange(n, 0, -1, device=got.device, dtype=got.dtype)
        return Keep.from_topk(got / lookers, view.budget, view.valid)
'''


def _same(src: str, board: str) -> list[str]:
    c = computation(src)
    return [m.short_name for m in computation_matches(c.features, BARE, c.paths, board) if m.level == "same"]


def test_attention_over_the_count_of_its_lookers_is_a_mean() -> None:
    assert "count_normalised" in computation(MEAN).features
    assert "ZipCache" in _same(MEAN, "B_online")


@pytest.mark.parametrize("softened", [
    "got / lookers.sqrt()",
    "got / torch.log1p(lookers)",
    "got * lookers ** -0.5",
    "got / lookers.pow(0.75)",
    "got * torch.rsqrt(lookers)",
])
def test_attention_over_a_softened_count_is_no_mean(softened: str) -> None:
    """A root, a logarithm or a power of the count leaves part of the exposure in the score: a total so divided
    ranks between the total and the mean, which is neither H2O's sum nor ZipCache's mean."""
    src = MEAN.replace("(got / lookers,", "(" + softened + ",")
    assert src != MEAN
    feats = computation(src).features
    assert "count_normalised" not in feats and "count_damped" in feats, sorted(feats)
    assert "ZipCache" not in _same(src, "B_online")


def test_a_softened_count_bound_to_a_name_first_is_still_softened() -> None:
    src = MEAN.replace("        return Keep.from_topk(got / lookers,",
                       "        damp = lookers.sqrt()\n        return Keep.from_topk(got / damp,")
    assert src != MEAN
    feats = computation(src).features
    assert "count_normalised" not in feats and "count_damped" in feats, sorted(feats)


DECODE = HEAD + '''class Worn(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        total = view.recall("total")
        total = a if total is None else total + a
        view.remember("total", total)
        age = (view.positions[0].max() - view.positions[0] + 1).to(a.dtype)
        return Keep.from_topk(total / age.sqrt(), view.budget, view.valid)
'''


def test_accumulated_attention_over_a_damped_exposure_is_no_plain_h2o_port() -> None:
    """H2O's running sum divided by the root of each token's age: H2O is in it, with a term H2O does not have."""
    assert "count_damped" in computation(DECODE).features
    assert "H2O" not in _same(DECODE, "C")
    assert "H2O" in _same(DECODE.replace("total / age.sqrt()", "total"), "C")
