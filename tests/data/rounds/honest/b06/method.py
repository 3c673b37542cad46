"""Top-m mean of the repeat pass (board B_offline, reconstruction queries).

KVzip scores a cached pair by the maximum attention it receives over the queries of the "repeat the context" pass.
A maximum is one spike: a single repeat query can give a stray token a large weight. We score a pair instead by the
mean of the m = 4 largest attentions it receives over the repeat queries (per query head), then take the max over
the KV head's query heads. The running top-m is kept chunk by chunk (concatenate, topk), so no repeat x context
matrix is ever held beyond one chunk. The first four tokens are kept, as in KVzip.

Builds on KVzip (Kim et al., 2025, arXiv 2505.23416): its repeat pass (the harness's reconstruction queries) and its
max-over-group reduction; the four kept opening tokens follow StreamingLLM (Xiao et al., 2023, arXiv 2309.17453).
Replacing the max over repeat queries by a top-m mean is our change, and a small one.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RepeatTopMean(EvictionMethod):
    name = "repeat_top_mean"
    reconstruction_queries = True
    top_m = 4
    n_sink = 4
    rows_per_chunk = 64

    def _top_m(self, view: LayerView) -> torch.Tensor:
        q = view.queries
        h_q, n, _ = q.shape
        m = min(self.top_m, n)
        best = None
        for start in range(0, n, self.rows_per_chunk):
            attn = view.attention(q[:, start:start + self.rows_per_chunk])  # (H_q, c, T), repeat is after the context
            pool = attn if best is None else torch.cat([best, attn], dim=1)
            best = pool.topk(min(m, pool.shape[1]), dim=1).values
        return best.mean(dim=1)  # (H_q, T)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        per_head = self._top_m(view)
        score = per_head.view(view.n_kv_heads, view.model.group_size, -1).amax(dim=1)
        score = score.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
