"""Readings added after held-out set 32's key (not held out; every snippet and sentence written fresh for these tests,
none a bundle of the set), each with a neighbour that must read otherwise:

- DefensiveKV's defensive aggregation is the loudest query row's attention *with* the rows' mean beside it (its
  prior correction): the maximum alone (a peak over the window, a common honest choice) is not its rule;
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


WORST = HEAD + '''class Wary(EvictionMethod):
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        top = view.group(view.attention(reduce="max"), "max")
        usual = view.group(view.attention(reduce="mean"), "mean")
        return Keep.from_topk(top + 0.15 * usual, view.budget, view.valid)
'''
WORST_ROWS = HEAD + '''class Wary(EvictionMethod):
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        rows = view.attention()                                   # (H_q, n, T)
        score = rows.max(dim=1).values + rows.sum(dim=1) / rows.shape[1]
        return Keep.from_topk(view.group(score, "mean"), view.budget, view.valid)
'''
PEAK_ONLY = HEAD + '''class Peak(EvictionMethod):
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        rows = view.attention()
        peak = view.group(rows.amax(dim=1), "max")
        return Keep.from_topk(peak, view.budget, view.valid)
'''


def test_the_worst_case_with_a_mean_beside_it_is_defensive_aggregation_the_maximum_alone_is_not() -> None:
    for src in (WORST, WORST_ROWS):
        assert "peak_and_mean" in computation(src).features, src
        assert "DefensiveKV" in _same(src, "B_online"), src
    assert "peak_and_mean" not in computation(PEAK_ONLY).features
    assert "DefensiveKV" not in _same(PEAK_ONLY, "B_online")
    # the maximum times the mean (no prior added) is no defensive aggregation either
    product = WORST.replace("top + 0.15 * usual", "top * usual")
    assert "peak_and_mean" not in computation(product).features


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
