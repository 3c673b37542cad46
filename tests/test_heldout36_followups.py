"""Readings added after held-out set 36's key (not held out; every snippet and sentence written fresh for these
tests, none a bundle of the set), each with a neighbour that must read otherwise:

- a gloss in brackets after a credited work says what that work does ("X (spans rather than tokens)"), and a
  substitution in "Builds on" says how a part is applied: neither sets this method against the work;
- attention divided by the mean attention of its distance bin corrects the positional bias: no slash lines scored;
- each query's own nucleus (top-p of its row) summed over the queries is a weighted vote, no coverage budget;
- a row-softmax of key-key logits is a likeness of the keys, and scores carried through it spread over the keys'
  similarity graph (``similarity_propagation``), no walk along attention;
- budgets said to differ by layer, in code without the budget hook that never reads its layer: a proof; "per-layer
  budget" for a selection made within each layer says no variation, and is none.
"""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import credit
from reviewbench.flags.misstated import misstated_flags
from reviewbench.priorart import load_index

HEAD = "import torch\nimport torch.nn.functional as F\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"


def _desc(builds_on: str) -> str:
    return ("# Tail Spans\n\n## Idea\nKeep where the question lands and what follows.\n\n## Builds on\n" + builds_on +
            "\n\n## Method summary\nQuestion attention, each peak extended forward.\n")


def _credited(builds_on: str, name: str) -> bool:
    return credit(_desc(builds_on), load_index().by_name(name)).credited


def test_a_gloss_with_a_contrast_word_inside_its_brackets_is_still_credit() -> None:
    entry = ("TOVA (the newest query's attention) and StreamingLLM (an opening block kept rather than a middle "
             "one); the forward extension is new.")
    assert _credited(entry, "TOVA")
    assert _credited(entry, "StreamingLLM")


def test_a_contrast_outside_the_brackets_is_still_a_contrast() -> None:
    assert not _credited("Unlike TOVA (the newest query's attention), we read every question row.", "TOVA")


def test_a_substitution_in_builds_on_says_how_a_part_is_applied() -> None:
    assert _credited("H2O (accumulated attention), and beam pruning from decoding, applied to cache slots "
                     "instead of hypotheses.", "H2O")


def test_a_work_named_after_instead_of_is_set_aside() -> None:
    assert not _credited("A running sum of attention instead of H2O's totals.", "H2O")


BINNED = HEAD + '''class Binned(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.attention()
        gap = (view.query_positions.float()[:, None] - view.positions[0].float()[None, :]).clamp_min(0)
        bucket = gap.sqrt().floor().long()
        nb = int(bucket.max()) + 1
        sums = torch.zeros(a.shape[0], nb).index_add_(1, bucket.flatten(), a.flatten(1))
        many = torch.bincount(bucket.flatten(), minlength=nb).clamp_min(1)
        expected = (sums / many)[:, bucket]
        lift = (a / expected.clamp_min(1e-8)).mean(dim=1)
        return Keep.from_topk(view.group(lift, "mean"), view.budget, view.valid)
'''
SLASHES = HEAD + '''class Slashes(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.attention()
        gap = (view.query_positions[:, None] - view.positions[0][None, :]).clamp_min(0)
        sums = torch.zeros(a.shape[0], view.n_tokens).index_add_(1, gap.flatten(), a.flatten(1))
        dist = (view.positions[0].max() - view.positions[0]).clamp_min(0)
        score = sums[:, dist]
        return Keep.from_topk(view.group(score, "mean"), view.budget, view.valid)
'''


def test_attention_over_its_distance_bin_s_mean_is_no_slash_score() -> None:
    assert "diagonal_sums" not in computation(BINNED).features


def test_attention_summed_by_distance_and_read_as_the_score_is_the_slash() -> None:
    assert "diagonal_sums" in computation(SLASHES).features


NUCLEUS = HEAD + '''class Nucleus(EvictionMethod):
    query_window = 16
    p = 0.7

    def select(self, view: LayerView) -> Keep:
        a = view.attention()
        top, idx = a.sort(dim=-1, descending=True)
        above = top.cumsum(dim=-1) - top
        kept = top * (above < self.p).float()
        rows = torch.zeros_like(a).scatter(-1, idx, kept)
        return Keep.from_topk(view.group(rows.sum(dim=1), "sum"), view.budget, view.valid)
'''
SHARE = HEAD + '''class Share(EvictionMethod):
    query_window = 16
    p = 0.7

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention(reduce="sum"), "sum")
        top, idx = s.sort(dim=-1, descending=True)
        share = top.cumsum(dim=-1) / top.sum(dim=-1, keepdim=True)
        k = int((share < self.p).sum(dim=-1).max()) + 1
        return Keep.from_topk(s, min(k, view.budget), view.valid)
'''


def test_each_query_s_nucleus_summed_over_the_queries_is_a_vote_not_a_coverage() -> None:
    assert "attention_coverage" not in computation(NUCLEUS).features


def test_a_share_of_the_summed_attention_sizing_the_kept_set_is_a_coverage() -> None:
    assert "attention_coverage" in computation(SHARE).features


SPREAD = HEAD + '''class Spread(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention(reduce="sum"), "sum")
        k = view.keys.float()
        like = torch.softmax(k @ k.transpose(1, 2) * view.model.scale, dim=-1)
        spread = torch.einsum("ht,hts->hs", s, like)
        return Keep.from_topk(s + 0.3 * spread, view.budget, view.valid)
'''
WALK = HEAD + '''class Walk(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "mean")
        sq = a[:, :, -a.shape[1]:]
        two = sq @ sq
        return Keep.from_topk(two.sum(1), view.budget, view.valid)
'''


def test_scores_through_a_softmax_of_key_logits_spread_over_the_keys_likeness() -> None:
    feats = computation(SPREAD).features
    assert {"key_similarity", "similarity_propagation"} <= set(feats)
    assert "attention_propagation" not in feats


def test_attention_through_attention_is_still_a_walk_along_attention() -> None:
    feats = computation(WALK).features
    assert "attention_propagation" in feats and "similarity_propagation" not in feats


FLAT = HEAD + '''class Flat(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention(reduce="sum"), "sum")
        return Keep.from_topk(s, view.budget, view.valid)
'''
HOOKED = FLAT.replace("    def select(", '''    def layer_budgets(self, mean_budget, n_tokens, model):
        n = len(model.attention_layers)
        return [int(mean_budget * (1.3 - 0.6 * i / max(1, n - 1))) for i in range(n)]

    def select(''')
LAYERED = ("# Flat\n\n## Idea\nDense layers need less.\n\n## Method summary\nWindow attention ranks the tokens. Layers "
           "whose attention is flatter get larger caps through the layer-budget hook.\n")


def _strengths(src: str) -> list[str]:
    return [f.strength for f in misstated_flags(LAYERED, src) if f.flag == "MISSTATED_METHOD"]


def test_layer_budgets_stated_in_code_without_the_hook_or_the_layer_are_a_proof() -> None:
    assert _strengths(FLAT) == ["proof"]


def test_with_the_hook_the_stated_budgets_need_a_measurement() -> None:
    assert "proof" not in _strengths(HOOKED)


def test_a_budget_per_layer_that_is_not_said_to_vary_is_no_proof() -> None:
    desc = LAYERED.replace("Layers whose attention is flatter get larger caps through the layer-budget hook.",
                           "Per-layer budget, no selection across layers.")
    assert desc != LAYERED
    assert [f.strength for f in misstated_flags(desc, FLAT) if f.flag == "MISSTATED_METHOD"] != ["proof"]
