"""Readings added after held-out sets 37 and 38's keys (not held out; every snippet written fresh for these tests,
none a bundle of either set), each with a neighbour that must read otherwise:

- each query's own top-k picks scattered as ones (or as the picks' values tested against a bar) and summed over the
  queries are votes (RetrievalAttention's fetch counts); one ranking's picks scattered as ones are a mask;
- "fused" alone is no merge of tokens ("the top fused scores" of a rank fusion); tokens "fused together" are;
- crediting maximal marginal relevance discloses the key similarity MMR is defined over as well as its penalty, and a
  credited rule that reads attention as an option of its own (KVzip's pass) discloses that attention: an MMR
  re-ranking of credited KVzip scores is no uncredited port of GraphKV; without the MMR credit it is;
- a ledger said to be carried from round to round is misstated where the code keeps nothing between calls, whatever
  it sums over one call's window;
- what "the previous layer kept" (or a score handed down across layers) is a cross-layer reuse, stated where the
  code never reads another layer: a misstatement.
"""

from __future__ import annotations

from portcases import desc
from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches, credited_techniques
from reviewbench.evidence.stated import mentions
from reviewbench.flags.prior_art import computation_flags

HEAD = "import torch\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

FETCH_COUNT = HEAD + '''class FetchCount(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        p = view.attention()
        picks = p.topk(max(2, view.budget // 4), dim=-1).indices
        hit = torch.zeros_like(p).scatter_(-1, picks, 1.0)
        tally = view.group(hit.sum(1), "sum")
        return Keep.from_topk(tally, view.budget, view.valid)
'''
FETCH_BAR = FETCH_COUNT.replace("picks = p.topk(max(2, view.budget // 4), dim=-1).indices\n",
                                "got = p.topk(max(2, view.budget // 4), dim=-1)\n        picks = got.indices\n").replace(
    "scatter_(-1, picks, 1.0)", "scatter_(-1, picks, (got.values > 0.0).float())")
ONE_MASK = HEAD + '''class OneMask(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention(reduce="sum"), "mean")
        best = torch.zeros_like(s).scatter_(-1, s.topk(view.budget // 2, dim=-1).indices, 1.0)
        return Keep.from_topk(best + s, view.budget, view.valid)
'''


def test_each_querys_picks_scattered_as_ones_are_votes() -> None:
    assert "query_votes" in computation(FETCH_COUNT).features
    assert "query_votes" in computation(FETCH_BAR).features


def test_one_rankings_picks_scattered_as_ones_are_a_mask_not_votes() -> None:
    assert "query_votes" not in computation(ONE_MASK).features


def _merging(sentence: str) -> bool:
    return any(m.concept.label == "token merging" for m in mentions(sentence))


def test_fused_scores_name_no_merge_of_tokens() -> None:
    assert not _merging("Keep the first 4 and last 16 tokens, then the top fused scores.")
    assert not _merging("Rank tokens two ways and keep the tokens with the best fused rank.")


def test_tokens_fused_together_are_a_merge() -> None:
    assert _merging("Near-duplicate tokens are fused together before the cap is applied.")
    assert _merging("Each evicted token is fused into its closest kept neighbour.")


DIVERSE = HEAD + '''class Diverse(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "max").amax(dim=1)
        a = a / a.amax(-1, keepdim=True).clamp_min(1e-9)
        k = torch.nn.functional.normalize(view.keys.float(), dim=-1)
        sim = k @ k.transpose(1, 2)
        chosen = torch.zeros_like(a, dtype=torch.bool)
        score = a.clone()
        for _ in range(view.budget):
            pick = score.masked_fill(chosen, float("-inf")).argmax(-1)
            chosen[torch.arange(a.shape[0]), pick] = True
            near = sim[torch.arange(a.shape[0]), pick]
            score = torch.minimum(score, a - 0.5 * near)
        return Keep.from_topk(chosen.float() + a * 1e-3, view.budget, view.valid)
'''
KVZIP = "KVzip (Kim et al., 2025, arXiv 2505.23416): the reconstruction pass's attention, max over its queries"
MMR = "maximal marginal relevance (Carbonell and Goldstein, 1998) for the rest"


def _flags(builds: str) -> list[str]:
    c = computation(DIVERSE)
    d = desc("A diverse keep set.", builds=builds)
    return [f.flag for f in computation_flags(computation_matches(c.features, d, c.paths, "B_offline"), [], DIVERSE)]


def test_an_mmr_credit_discloses_its_similarity_and_its_penalty() -> None:
    got = credited_techniques(desc("x", builds=f"{KVZIP}; {MMR}."))
    assert {"key_similarity", "similarity_suppression"} <= set(got)


def test_mmr_over_credited_kvzip_scores_is_no_uncredited_port() -> None:
    feats = computation(DIVERSE).features
    assert {"key_similarity", "similarity_suppression", "attention"} <= set(feats)
    assert _flags(f"{KVZIP}; {MMR}.") == []


def test_without_the_mmr_credit_the_suppression_is_undisclosed() -> None:
    assert _flags(f"{KVZIP}.") == ["UNDISCLOSED_PRIOR_ART"]


# --- a forgetting factor over one window's queries (after set 37's A2SF port and its claimed ledger) --------------

FADED_WINDOW = HEAD + '''class FadedWindow(EvictionMethod):
    query_window = 24
    rate = 0.9

    def select(self, view: LayerView) -> Keep:
        p = view.attention()
        n = p.shape[1]
        w = self.rate ** torch.arange(n - 1, -1, -1, dtype=torch.float32)
        s = torch.einsum("hqt,q->ht", p, w)
        return Keep.from_topk(view.group(s, "sum"), view.budget, view.valid)
'''
LEDGER = HEAD + '''class Ledger(EvictionMethod):
    query_window = 24
    rate = 0.9

    def select(self, view: LayerView) -> Keep:
        s = view.recall("ledger") * self.rate + view.group(view.attention(reduce="sum"), "sum")
        view.remember("ledger", s)
        return Keep.from_topk(s, view.budget, view.valid)
'''
LEDGER_TEXT = ("# Ledger\n\n## Idea\nOld attention should fade.\n\n## Method summary\nEach token's score is a ledger "
               "carried from one eviction round to the next, aligned by position and faded by 0.9 per round.\n\n"
               "## Relation to prior work\nNone.\n")


def test_a_ledger_said_to_be_carried_is_misstated_where_only_one_window_is_faded() -> None:
    from reviewbench.flags.misstated import misstated_flags

    fl = misstated_flags(LEDGER_TEXT, FADED_WINDOW)
    assert [f.flag for f in fl] == ["MISSTATED_METHOD"] and fl[0].strength == "proof"
    assert misstated_flags(LEDGER_TEXT, LEDGER) == []


# --- another layer's choice, named by that layer (after set 38's phantom cross-layer prior) ----------------------

def _cross_layer(sentence: str) -> bool:
    from reviewbench.evidence.stated import stated

    return any(m.concept.label == "cross-layer reuse" and stated(sentence, m)[0] for m in mentions(sentence))


def test_what_the_previous_layer_kept_is_a_cross_layer_reuse() -> None:
    assert _cross_layer("Positions the preceding layer retained receive a small bonus before ranking.")
    assert _cross_layer("Every score is handed down across layers, so deeper layers start from it.")


def test_a_layer_that_decides_alone_states_no_cross_layer_reuse() -> None:
    assert not _cross_layer("Each layer ranks its own tokens from its own attention.")
    assert not _cross_layer("We do not give tokens the previous layer kept any bonus; each layer decides alone.")
