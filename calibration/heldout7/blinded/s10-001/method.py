"""Peak-relative reconstruction score (board B_offline).

KVzip (Kim et al., 2025, arXiv 2505.23416) scores each cached pair by the maximum attention it receives while the
model re-reads the context (the harness's one-off reconstruction pass). We keep that pass and the max over its
queries, but divide each repeat query's attention row by that row's own peak before taking the max: a token counts
as needed when some repeat query attends to it nearly as much as to its favourite token, whether that query is sharp
or diffuse. Diffuse repeat queries (long-range copies, rare tokens) otherwise never reach the top of a raw max.
The max runs over the repeat queries and over the KV head's query heads; the first 4 tokens are kept (as KVzip).
Without a reconstruction pass (other boards) it keeps the most recent tokens.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class PeakRelativeReconstruction(EvictionMethod):
    name = "peak_relative_reconstruction"
    reconstruction_queries = True
    n_sink = 4
    chunk = 128

    def scores(self, view: LayerView) -> torch.Tensor:
        q = view.queries
        h_q, n = q.shape[0], q.shape[1]
        best = torch.zeros(h_q, view.n_tokens, device=view.keys.device)
        for start in range(0, n, self.chunk):
            attn = view.attention(q[:, start: start + self.chunk])              # (H_q, c, T), not causal
            peak = attn.amax(dim=-1, keepdim=True).clamp_min(1e-12)
            best = torch.maximum(best, (attn / peak).amax(dim=1))
        return view.group(best, "max")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self.scores(view).masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
