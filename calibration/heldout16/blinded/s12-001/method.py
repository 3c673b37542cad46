"""Top-4 mean re-reading score (board B_offline).

KVzip (Kim et al., 2025) scores a cached pair by the single largest attention it receives from the re-reading pass.
One query is a thin basis: a pair that one re-reading query happens to hit hard scores as high as one the pass keeps
coming back to. We average the four largest attentions a pair receives instead, per query head, and take the maximum
over the query heads of the KV head. The top four are tracked as the pass's queries are read in chunks of 256 (the
pass is never held as a whole queries x tokens matrix). The 4 opening tokens are kept; without a re-reading pass
(other boards) the newest tokens are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class TopFourRereading(EvictionMethod):
    name = "top_four_rereading"
    reconstruction_queries = True
    depth = 4
    chunk = 256
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h_q, n_q = view.queries.shape[0], view.queries.shape[1]
        best = torch.zeros(h_q, self.depth, view.n_tokens, device=view.keys.device)
        for s in range(0, n_q, self.chunk):
            a = view.attention(view.queries[:, s:s + self.chunk])  # (H_q, c, T), not causal
            both = torch.cat([best, a], dim=1)
            best = both.topk(self.depth, dim=1).values
        score = view.group(best.mean(dim=1), "max")
        return Keep.from_topk(score.masked_fill(view.positions < self.opening, float("inf")), view.budget,
                              view.valid)
