"""Readings added after held-out set 32's key (not held out; every snippet and sentence written fresh for these tests,
none a bundle of the set), each with a neighbour that must read otherwise:

- this call's peak attention held against the one remembered from earlier calls (a running maximum across
  evictions) is an operation of its own, no one window's maximum (DefensiveKV's worst case);
- a key compared with the key beside it (a change between successive tokens) is no redundancy over the cache: R-KV's
  rule needs the keys against the other keys;
- a description that says a layer is tested on where its attention falls (a share of it passing a bar) over code
  that decides by a fixed schedule misstates it;
- CAOTE's renormalised output change read off the reconstruction pass on board B_offline is CAOTE's rule there.
"""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches
from reviewbench.flags.misstated import misstatements

HEAD = "import torch\nimport torch.nn.functional as F\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
BARE = "# Method\n\n## Idea\nSomething.\n\n## Method summary\nA score.\n\n## Relation to prior work\nNone.\n"


def _same(src: str, board: str, description: str = BARE) -> list[str]:
    c = computation(src)
    return [m.short_name for m in computation_matches(c.features, description, c.paths, board) if m.level == "same"]


NEIGHBOUR = HEAD + '''class Shift(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        k = view.keys.float()
        change = 1.0 - F.cosine_similarity(k[:, 1:], k[:, :-1], dim=-1)
        change = torch.cat([change[:, :1], change], dim=1)
        return Keep.from_topk(a - 0.1 * (1.0 - change), view.budget, view.valid)
'''
ROLLED = NEIGHBOUR.replace("F.cosine_similarity(k[:, 1:], k[:, :-1], dim=-1)",
                           "(F.normalize(k, dim=-1) * F.normalize(k, dim=-1).roll(1, dims=1)).sum(-1)[:, 1:]")
REDUNDANT = HEAD + '''class Spare(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        k = F.normalize(view.keys.float(), dim=-1)
        sim = k @ k.transpose(1, 2)
        redundancy = sim.mean(dim=-1)
        return Keep.from_topk(a - 0.1 * redundancy, view.budget, view.valid)
'''


def test_a_key_against_its_neighbour_is_a_successive_similarity_not_r_kv_redundancy() -> None:
    for src in (NEIGHBOUR, ROLLED):
        f = computation(src).features
        assert "successive_similarity" in f, src
        assert "R-KV" not in _same(src, "B_online"), src
    f = computation(REDUNDANT).features
    assert "key_similarity" in f and "successive_similarity" not in f
    assert "R-KV" in _same(REDUNDANT, "B_online")
    # two different slices of the keys (the first half against the second) are no neighbours
    halves = NEIGHBOUR.replace("k[:, 1:], k[:, :-1]", "k[:, :8], k[:, 8:16]")
    assert "successive_similarity" not in computation(halves).features


SCHEDULE = HEAD + '''class Quiet(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        if view.layer % 3 == 2:                              # a fixed set of layers keeps ends only
            score = view.positions.float().clone()
            score[:, :4] = float("inf")
            return Keep.from_topk(score, view.budget, view.valid)
        return Keep.from_topk(view.group(view.attention(reduce="sum"), "mean"), view.budget, view.valid)
'''
TESTED = SCHEDULE.replace('''        if view.layer % 3 == 2:                              # a fixed set of layers keeps ends only''',
                          '''        a = view.group(view.attention(reduce="mean"), "mean")
        ends = a[:, :4].sum(-1) + a[:, -16:].sum(-1)
        if bool((ends / a.sum(-1) > 0.85).all()):''')
SHARE_CLAIMS = [
    "Each layer is checked first: where the fraction of its window attention landing on the first and last tokens "
    "exceeds 0.85, the layer keeps only those ends.",
    "A layer is quiet when the share of it that goes to the opening four tokens and the newest sixteen passes 0.85.",
]


def _summary(text: str) -> str:
    return (f"# Quiet\n\n## Idea\nSome layers look at the ends.\n\n## Method summary\n{text}\n\n"
            "## Relation to prior work\nNone.\n\n## Evidence\nNone.\n\n## Limitations\nSome.\n")


def test_a_layer_test_on_its_attention_share_over_a_fixed_schedule_is_misstated() -> None:
    assert "attention_threshold" in computation(TESTED).features
    for text in SHARE_CLAIMS:
        found = [m for m in misstatements(_summary(text), SCHEDULE) if m.mechanism.startswith("attention-mass")]
        assert found and found[0].strict and found[0].absent, text
        assert not [m for m in misstatements(_summary(text), TESTED) if m.mechanism.startswith("attention-mass")], text
    # a share mentioned with no bar it must pass states no test
    plain = "Most layers give a large share of their attention to the first tokens; all keep the top scores."
    assert not [m for m in misstatements(_summary(plain), SCHEDULE) if m.mechanism.startswith("attention-mass")]


CHANGE = HEAD + '''class Ripples(EvictionMethod):
    reconstruction_queries = True

    def select(self, view: LayerView) -> Keep:
        a = view.attention()                                      # (H_q, n, T): the repeat pass, no causal mask
        v = view.values.float().repeat_interleave(view.model.group_size, dim=0)
        out = a @ v                                               # (H_q, n, d)
        gap = torch.cdist(out, v)                                 # ||v_j - o_i||
        change = (a / (1.0 - a).clamp_min(1e-6) * gap).sum(dim=1)
        return Keep.from_topk(view.group(change, "sum"), view.budget, view.valid)
'''


def test_caote_read_off_the_reconstruction_pass_is_caote_on_board_b_offline() -> None:
    f = computation(CHANGE).features
    assert {"attention_output", "removal_rescale", "reconstruction"} <= set(f), sorted(f)
    assert "CAOTE" in _same(CHANGE, "B_offline")


CARRIED = HEAD + '''class Echo(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        now = view.group(view.attention(reduce="max"), "max")
        earlier = view.recall("top")
        top = torch.maximum(earlier, now)
        view.remember("top", top)
        return Keep.from_topk(top, view.budget, view.valid)
'''


def test_a_peak_carried_across_evictions_is_an_operation_of_its_own() -> None:
    """This call's peak attention against the one remembered from the earlier calls, the larger kept, is a running
    maximum over the generation: no rule that reads one window's attention per call (DefensiveKV's worst case)."""
    f = computation(CARRIED).features
    assert "carried_peak" in f and "max_attention" in f
    assert "DefensiveKV" not in _same(CARRIED, "C")
    # a step stamped where attention is strong, carried by a running max, is a clock (LazyEviction's), no peak
    clock = CARRIED.replace('''        now = view.group(view.attention(reduce="max"), "max")''',
                            '''        a = view.group(view.attention(reduce="max"), "max")
        now = torch.where(a * view.n_tokens > 1.0, view.positions.float(), torch.full_like(a, -1.0))''')
    assert "carried_peak" not in computation(clock).features
    # the same peak without the memory is one window's maximum
    alone = CARRIED.replace("torch.maximum(earlier, now)", "now")
    assert "carried_peak" not in computation(alone).features


PER_HEAD_PAGES = HEAD + '''class Pages(EvictionMethod):
    question_queries = True
    page = 8

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="max"), "max")               # (H_kv, T): each KV head its own
        t = a.shape[1]
        pad = (-t) % self.page
        p = F.pad(a, (0, pad)).view(a.shape[0], -1, self.page).amax(-1)   # (H_kv, pages)
        s = p.repeat_interleave(self.page, dim=1)[:, :t]                   # each head's pages back onto its tokens
        return Keep.from_topk(s, view.budget, view.valid)
'''
SHARED_PAGES = PER_HEAD_PAGES.replace(
    '''        s = p.repeat_interleave(self.page, dim=1)[:, :t]                   # each head's pages back onto its tokens''',
    '''        s = p.sum(0, keepdim=True).repeat_interleave(self.page, dim=1)[:, :t].expand(a.shape[0], -1)''')
SHARED_CLAIM = ("Pages of eight tokens are scored by their loudest question row; one set of pages is picked for the "
                "whole layer, shared by all KV heads, ranked by the heads' summed page scores.")


def test_one_page_set_said_shared_by_all_heads_over_per_head_choices_is_misstated() -> None:
    """A copy along the tokens (``repeat_interleave(.., dim=1)``) stretches each head's own row: it cannot share one
    selection across the heads, so code whose only copies are such computes no shared selection."""
    found = [m for m in misstatements(_summary(SHARED_CLAIM), PER_HEAD_PAGES) if m.mechanism.startswith("one selection")]
    assert found and found[0].strict and found[0].absent
    assert not [m for m in misstatements(_summary(SHARED_CLAIM), SHARED_PAGES)
                if m.mechanism.startswith("one selection") and m.strict]
    # a copy onto the heads' axis could share one selection: no proof there
    heads = PER_HEAD_PAGES.replace("dim=1)[:, :t]  ", "dim=0)[:, :t]  ")
    assert not [m for m in misstatements(_summary(SHARED_CLAIM), heads)
                if m.mechanism.startswith("one selection") and m.strict]
    # a budget shared by the heads is no set of positions
    budget = "Each head ranks its own pages; the layer's budget is shared by all KV heads equally."
    assert not [m for m in misstatements(_summary(budget), PER_HEAD_PAGES) if m.mechanism.startswith("one selection")]
