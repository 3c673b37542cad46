"""Follow-ups of the fifth held-out set's measurement: three false flags, each from a general cause.

- how many to pick in a round (``left // r``) is a size: a ranking with it picks no blocks (a greedy coverage method
  read as ChunkKV's chunk rule before);
- the positions a selection layer chose, stored on the module as positions gathered by the ranking and read back
  (through names made from them) by later layers, are a selection reused across layers; a credited port whose rule
  explains the code is not flagged for behaving like a baseline whose rule it computes only with a mechanism beside;
- a head dimension split into subspaces with a codebook in each is product quantisation, not a low-rank
  approximation, and keys assigned to their nearest centroid are a codebook.

Every method and description here is written fresh for these tests; none is a held-out or calibration bundle. Each
fix has an adversarial counterpart that must still be flagged.
"""

from __future__ import annotations

from reviewbench.evidence.behaviour import BehaviourMatch
from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches
from reviewbench.flags.misstated import misstated_flags
from reviewbench.flags.prior_art import computation_flags, prior_art_flags

HEAD = "import torch\nimport torch.nn.functional as F\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"


def _feats(src: str) -> dict[str, int]:
    return computation(src).features


def _flagged(src: str, desc: str = "") -> bool:
    return bool(computation_flags(computation_matches(_feats(src), desc), [], src))


# --- 1. a greedy round's size is no block -----------------------------------------------------------------------

GREEDY = HEAD + '''
class Spread(EvictionMethod):
    query_window = 16
    per_round = 32

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        out = []
        for h in range(view.n_kv_heads):
            x = F.normalize(view.values[h].float(), dim=-1)
            taken = view.positions[h] >= int(view.query_positions.min())
            far = 1 - (x @ x[taken].T).amax(dim=1)
            todo = view.budget - int(taken.sum())
            while todo > 0:
                step = max(1, todo // self.per_round)
                got = (a[h] * far).masked_fill(taken, -1.0).topk(step).indices
                taken[got] = True
                far = torch.minimum(far, 1 - (x @ x[got].T).amax(dim=1))
                todo -= step
            out.append(taken.nonzero().flatten())
        return Keep(tuple(out))
'''

# adversarial: the same loop shape, but the scores really are summed over fixed chunks of tokens and the top
# chunks kept whole (ChunkKV's rule), with no credit
CHUNKS = HEAD + '''
class Chunks(EvictionMethod):
    query_window = 16
    width = 8

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        t = a.shape[-1] // self.width * self.width
        per = a[:, :t].reshape(a.shape[0], t // self.width, self.width).sum(-1)
        top = per.topk(max(1, view.budget // self.width), dim=-1).indices
        idx = (top[..., None] * self.width + torch.arange(self.width)).flatten(1)
        return Keep(tuple(idx))
'''


def test_a_greedy_round_size_makes_no_block_ranking():
    f = _feats(GREEDY)
    assert "block_scores" not in f
    assert not _flagged(GREEDY)


def test_chunk_sums_ranked_are_still_blocks_and_flagged():
    assert "block_scores" in _feats(CHUNKS)
    assert _flagged(CHUNKS)


# --- 2. positions chosen at one layer, reused by later ones --------------------------------------------------------

REUSE = HEAD + '''
class Relay(EvictionMethod):
    query_window = 1
    pick_at = (1, 9)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.layer in self.pick_at or not hasattr(self, "_held"):
            s = view.attention(view.queries[:, -1:], reduce="sum").sum(0, keepdim=True)
            s = s.expand(view.n_kv_heads, -1).clone()
            kept = Keep.from_topk(s, view.budget, view.valid)
            self._held = (view.n_tokens, view.positions[0, kept.indices[0]].clone())
            return kept
        where = self._held[1]
        rows = []
        for h in range(view.n_kv_heads):
            j = torch.searchsorted(view.positions[h].contiguous(), where).clamp(max=view.n_tokens - 1)
            rows.append(j[view.positions[h, j] == where][: view.budget])
        return Keep(tuple(rows))
'''

# adversarial: the last query's attention averaged over heads, one set per layer, chosen afresh at every layer
# (TOVA's rule): nothing is reused across layers
LAST = HEAD + '''
class Last(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        s = view.attention(view.queries[:, -1:], reduce="sum").mean(0, keepdim=True)
        return Keep.from_topk(s.expand(view.n_kv_heads, -1).clone(), view.budget, view.valid)
'''

CREDITS_REUSE = """# Relay

## Idea
A port of TidalDecode (arXiv 2410.05076): selection layers pick positions that the next layers reuse.

## Method summary
- The final query's attention summed over heads picks the positions at the selection layers; the others reuse them.

## Builds on
- TidalDecode, arXiv 2410.05076 (the method ported)
"""

NEAR_TOVA = [BehaviourMatch(reference="baseline:tova", member="tova", jaccard=0.95, rank_corr=0.99)]


def test_positions_gathered_by_a_ranking_and_read_back_later_are_layer_reuse():
    assert "layer_reuse" in _feats(REUSE)
    assert "layer_reuse" not in _feats(LAST)


def test_a_credited_port_whose_rule_explains_the_code_is_not_flagged_for_a_baseline_it_behaves_like():
    computed = computation_matches(_feats(REUSE), CREDITS_REUSE)
    flags = prior_art_flags(NEAR_TOVA, [], {}, CREDITS_REUSE, REUSE, ("class Relay", 1), computed=computed)
    assert not [f for f in flags if f.flag == "UNDISCLOSED_PRIOR_ART" and f.raised_by == "evidence:behaviour"]
    assert any(m.short_name == "TidalDecode" and m.credited for m in computed)


def test_a_baseline_port_crediting_another_paper_is_still_flagged():
    # the code computes TOVA's rule outright (no reuse): crediting TidalDecode explains none of it
    computed = computation_matches(_feats(LAST), CREDITS_REUSE)
    flags = prior_art_flags(NEAR_TOVA, [], {}, CREDITS_REUSE, LAST, ("class Last", 1), computed=computed)
    assert [f for f in flags if f.flag == "UNDISCLOSED_PRIOR_ART"] or computation_flags(computed, NEAR_TOVA, LAST)
    # and without the computation evidence the behaviour alone still flags it
    assert [f for f in prior_art_flags(NEAR_TOVA, [], {}, CREDITS_REUSE, LAST, ("class Last", 1))
            if f.flag == "UNDISCLOSED_PRIOR_ART"]


# --- 3. product codebooks are no low-rank approximation --------------------------------------------------------

PQ = HEAD + '''
def _lloyd(x, c, steps=6):
    cent = x[torch.linspace(0, x.shape[0] - 1, c).long()].clone()
    for _ in range(steps):
        lab = torch.cdist(x, cent).argmin(dim=1)
        tot = torch.zeros_like(cent).index_add_(0, lab, x)
        cnt = torch.bincount(lab, minlength=c).float()[:, None]
        cent = torch.where(cnt > 0, tot / cnt.clamp_min(1), cent)
    return torch.cdist(x, cent).argmin(dim=1), cent


class Coded(EvictionMethod):
    query_window = 16
    pieces = 4

    def select(self, view: LayerView) -> Keep:
        g = view.model.group_size
        w = view.keys.shape[-1] // self.pieces
        est = torch.zeros(view.keys.shape[:2])
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
            q = view.queries[h * g:(h + 1) * g].float()
            z = torch.zeros(q.shape[0], q.shape[1], k.shape[0])
            for p in range(self.pieces):
                lab, cent = _lloyd(k[:, p * w:(p + 1) * w], 8)
                z += (q[:, :, p * w:(p + 1) * w] @ cent.T)[:, :, lab]
            est[h] = (z * view.model.scale).softmax(-1).sum((0, 1))
        return Keep.from_topk(est, view.budget, view.valid)
'''

PQ_DESC = """# Coded attention

## Idea
Scores are estimated through small codebooks of the keys.

## Method summary
- The head dimension is cut into 4 subspaces; in each, 8 codewords are fitted to the keys by Lloyd iterations.
- The window queries' logits are read from a lookup table of query-codeword products; softmax, summed.
"""

# adversarial: the same description over code that never assigns keys to codewords (the exact window attention)
PLAIN = HEAD + '''
class Plain(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention(reduce="sum"), "mean")
        return Keep.from_topk(s, view.budget, view.valid)
'''

LOWRANK_DESC = """# Projected attention

## Method summary
- The keys are projected onto their dominant subspace (the top principal directions) before scoring.
"""


def test_codebooks_per_subspace_are_stated_and_computed():
    assert "key_clustering" in _feats(PQ)
    assert not misstated_flags(PQ_DESC, PQ)


def test_codebook_words_over_exact_attention_are_still_misstated():
    assert [f for f in misstated_flags(PQ_DESC, PLAIN) if "codebook" in f.explanation]


def test_a_dominant_subspace_is_still_a_low_rank_statement():
    assert [f for f in misstated_flags(LOWRANK_DESC, PLAIN) if "low-rank" in f.explanation]
