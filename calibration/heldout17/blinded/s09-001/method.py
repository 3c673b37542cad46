"""Top-4 replay retention (board B_offline).

Built on KVzip (Kim et al., 2025, arXiv 2505.23416): on board B_offline the harness replays the context once (the
model repeats it after a "repeat the previous context" instruction) and KVzip keeps the KV pairs with the largest
maximum attention from any replay row. A maximum rests on a single row, and in our dev runs a few replay rows
(line starts, repeated boiler-plate) put sharp spikes on tokens that are never needed again. We replace the maximum
by the mean of the 4 largest row attentions a token receives, per query head, then take the maximum over the KV
head's query heads as KVzip does. The 4 opening tokens are always kept. Rows are processed in chunks and only a
running top-4 per token is held, so nothing of size rows x tokens is built.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class TopFourReplay(EvictionMethod):
    name = "top4_replay"
    reconstruction_queries = True
    query_window = 32  # fallback rows when no replay is offered (other boards)
    depth = 4
    rows_per_chunk = 128
    opening = 4

    def _top_mean(self, view: LayerView) -> torch.Tensor:
        q = view.queries
        best = None  # (H_q, depth, T) running largest row attentions
        for a in range(0, q.shape[1], self.rows_per_chunk):
            attn = view.attention(q[:, a:a + self.rows_per_chunk]).float()  # (H_q, n, T)
            cand = attn if best is None else torch.cat([best, attn], dim=1)
            best = cand.topk(min(self.depth, cand.shape[1]), dim=1).values
        return best.mean(dim=1)  # (H_q, T)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = view.group(self._top_mean(view), "max")
        score = score.masked_fill(view.positions < self.opening, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
