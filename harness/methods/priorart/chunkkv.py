"""ChunkKV (Liu et al., 2025, arXiv 2502.00299): the observation window's attention (last w queries, summed
over the window, averaged over each KV head's query heads, then summed over the layer's heads) is summed over
contiguous chunks of the prefix; the top floor((budget - w) / c) chunks are kept whole, the same chunks for
every head, plus the window. Defaults: chunk size 10 and window 32 (the paper's main setting; no pooling, as
in its Algorithm 1). The remaining budget (< one chunk) is filled by the best tokens of the next-ranked chunk.
Layer-wise index reuse is not reproduced (one view at a time).
Settings: pa_chunkkv; pa_chunkkv?chunk_size=20&kernel=5; pa_chunkkv?share_heads=False; pa_chunkkv?chunk_size=5"""

from typing import ClassVar

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView
from harness.methods.priorart._blocks import whole_blocks_first


class ChunkKV(EvictionMethod):
    name = "pa_chunkkv"
    paper: ClassVar[str] = "ChunkKV"
    query_window = 32
    chunk_size = 10
    kernel = 1  # 1 = no pooling (Algorithm 1); kvpress's ChunkKVPress over SnapKV pools with 5
    share_heads = True  # one chunk set for the whole layer (scores summed over heads, as kvpress's ChunkKVPress)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        scores = view.attention(reduce="sum")  # (H_q, T)
        if self.kernel > 1:
            scores = F.avg_pool1d(scores[:, None], self.kernel, 1, self.kernel // 2)[:, 0]
        scores = view.group(scores, "mean")
        window = view.positions >= view.query_positions.min()
        scores = scores.masked_fill(window | ~view.valid_mask(), 0.0)
        if self.share_heads:
            scores = scores.sum(dim=0, keepdim=True).expand_as(scores)
        t, c = view.n_tokens, self.chunk_size
        chunks = F.pad(scores, (0, (-t) % c)).view(scores.shape[0], -1, c).sum(dim=-1)
        ranked = whole_blocks_first(chunks, scores, c).masked_fill(window, float("inf"))
        return Keep.from_topk(ranked, view.budget, view.valid)
