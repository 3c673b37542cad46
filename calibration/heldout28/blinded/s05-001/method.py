"""Sharp Echo: KVzip's re-reading pass, where only confident re-reading rows get a full vote.

Builds on KVzip (Kim et al., 2025, arXiv 2505.23416): the model re-reads the context after a "repeat" prompt
and each cached pair is scored by the most attention any re-reading query pays it. In that pass many rows are
diffuse (function words, line breaks): their maximum lands on whatever is least unlikely and lets filler in. Here
each re-reading row's attention is first multiplied by its sharpness, 1 - H(row) / log(T) (H the row's entropy),
so a pair earns its place from rows that were sure about it. The maximum over rows and over the query heads of
a KV head is kept, as in KVzip; the first four tokens are pinned. Without a re-reading pass (other boards) the
newest tokens are kept.
"""

import math

import torch

from harness.api import EvictionMethod, Keep, LayerView


class SharpEcho(EvictionMethod):
    name = "sharp_echo"
    reconstruction_queries = True
    n_sink = 4
    rows_per_chunk = 128

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        t = int(view.valid_mask().sum(dim=1).max())
        norm = math.log(max(2, t))
        best = torch.zeros(view.queries.shape[0], view.n_tokens, device=view.keys.device)
        for start in range(0, view.queries.shape[1], self.rows_per_chunk):
            rows = view.attention(view.queries[:, start:start + self.rows_per_chunk])  # (H_q, c, T)
            entropy = torch.special.entr(rows).sum(dim=-1, keepdim=True)
            sharp = (1.0 - entropy / norm).clamp_min(0.0)
            best = torch.maximum(best, (rows * sharp).amax(dim=1))
        score = view.group(best, "max")
        score = score.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
