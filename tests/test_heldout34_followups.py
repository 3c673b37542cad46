"""Readings added after held-out set 34's key (not held out; every snippet written fresh for these tests, none a
bundle of the set), each with a neighbour that must read otherwise:

- this call's query held against the query an earlier call left, an earlier tally reused while they stay alike, is
  TokenSelect's selection cache (``query_reuse``), an operation of its own beside attention.
"""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches

HEAD = "import torch\nimport torch.nn.functional as F\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
BARE = "# Method\n\n## Idea\nSomething.\n\n## Method summary\nA score.\n\n## Relation to prior work\nNone.\n"


def _same(src: str, board: str) -> list[str]:
    c = computation(src)
    return [m.short_name for m in computation_matches(c.features, BARE, c.paths, board) if m.level == "same"]


CACHED = HEAD + '''class Memo(EvictionMethod):
    query_window = 4

    def select(self, view: LayerView) -> Keep:
        fresh = view.group(view.attention(reduce="sum"), "sum")
        q_now = view.queries[:, -1].float().mean(dim=0)
        q_then = view.state.get("q")
        view.state["q"] = q_now
        if q_then is not None and F.cosine_similarity(q_now, q_then, dim=0) > 0.85:
            fresh = view.recall("tally")
        view.remember("tally", fresh)
        return Keep.from_topk(fresh, view.budget, view.valid)
'''
PLAIN = HEAD + '''class Fresh(EvictionMethod):
    query_window = 4

    def select(self, view: LayerView) -> Keep:
        fresh = view.group(view.attention(reduce="sum"), "sum")
        return Keep.from_topk(fresh, view.budget, view.valid)
'''


def test_a_tally_reused_while_consecutive_queries_stay_alike_is_tokenselects_selection_cache() -> None:
    assert "query_reuse" in computation(CACHED).features
    assert "TokenSelect" in _same(CACHED, "C")


def test_the_same_attention_without_the_reuse_is_no_tokenselect_port() -> None:
    assert "query_reuse" not in computation(PLAIN).features
    assert "TokenSelect" not in _same(PLAIN, "C")


def test_a_query_held_against_the_keys_is_no_reuse_of_an_earlier_selection() -> None:
    src = CACHED.replace("F.cosine_similarity(q_now, q_then, dim=0) > 0.85",
                         "F.cosine_similarity(q_now, view.keys.float().mean(dim=(0, 1)), dim=0) > 0.85")
    assert src != CACHED
    assert "query_reuse" not in computation(src).features
