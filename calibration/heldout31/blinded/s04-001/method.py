"""Two Halves: keep what both halves of the question ask about.

The question queries (and the closing prompt rows handed over with them) are split into an earlier and a later
half. Each half sums the causal attention its rows pay to every token; a token's score is the geometric mean of the
two sums, so a token only one half of the question reads ranks below a token both halves read. Scores are
averaged over each KV head's query heads; the question span itself is kept. Builds on SnapKV's question/window
attention (Li et al., 2024); the agreement rule is ours.
"""

from harness import EvictionMethod, Keep, LayerView


class TwoHalves(EvictionMethod):
    name = "two_halves"
    question_queries = True
    query_window = 16
    floor = 1e-6

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                      # (H_q, N, T), causal
        n = attn.shape[1]
        if n < 2:
            joint = attn.sum(dim=1)
        else:
            cut = n // 2
            early = attn[:, :cut].sum(dim=1).clamp_min(self.floor)
            late = attn[:, cut:].sum(dim=1).clamp_min(self.floor)
            joint = (early * late).sqrt()
        scores = view.group(joint, "mean")
        asked = view.positions >= view.query_positions.min()
        scores = scores.masked_fill(asked, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
