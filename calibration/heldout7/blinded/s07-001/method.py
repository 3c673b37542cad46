"""Output-aligned question attention (board A).

Question-aware ranking in the style of SnapKV (arXiv 2404.14469): the queries of the question span and of the last
16 prompt positions score the context by causal softmax attention. The change: a token's attention from a query
only counts in proportion to how well the token's value agrees with what that query actually reads out, i.e. the
cosine between v_i and the query's attention output o_q = sum_j a_qj v_j (negative agreement counts as zero; a
small floor epsilon keeps pure attention as a tie-breaker). Tokens that are attended but pull the output away from
its direction (sinks, separators) lose weight; tokens that carry the read-out content gain.
Scores are summed over the queries and over the KV head's query heads; the question/closing span and the first 4
tokens are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class OutputAlignedAttention(EvictionMethod):
    name = "output_aligned_attention"
    query_window = 16
    question_queries = True
    floor = 0.05
    n_sink = 4

    def scores(self, view: LayerView) -> torch.Tensor:
        h_kv, t = view.n_kv_heads, view.n_tokens
        g = view.model.group_size
        attn = view.attention()                                               # (H_q, N, T), causal
        attn = attn.reshape(h_kv, g, attn.shape[1], t)
        v = view.values.float()                                               # (H_kv, T, D)
        out = torch.einsum("hgnt,htd->hgnd", attn, v)                         # what each query reads out
        v_unit = v / v.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        o_unit = out / out.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        agree = torch.einsum("hgnd,htd->hgnt", o_unit, v_unit).clamp_min(0.0)
        return (attn * (agree + self.floor)).sum(dim=(1, 2))                  # (H_kv, T)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self.scores(view)
        keep = (view.positions >= int(view.query_positions.min())) | (view.positions < self.n_sink)
        return Keep.from_topk(score.masked_fill(keep, float("inf")), view.budget, view.valid)
