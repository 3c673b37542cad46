"""SlimInfer (Long et al., AAAI 2026, arXiv 2508.06447): prompt tokens are pruned from the hidden states at
intermediate layers, block-wise: blocks of contiguous tokens ("TokenUnits") are scored by the attention the
last token pays them, summed over all heads of the layer (hidden-state pruning removes a token for every head,
so one selection per layer), and the lowest blocks are dropped whole; the block holding the last token stays.
Here the pruning becomes the layer's eviction at a uniform budget (no layer schedule). Block size 32 and the
block score (sum of the last query's attention over the block's tokens) are from memory of the paper; the
official code was not available to check them. Remainder below one block: best tokens of the next block.
Settings: pa_sliminfer; pa_sliminfer?block_size=16; pa_sliminfer?block_size=64; pa_sliminfer?recent_blocks=0"""

from typing import ClassVar

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView
from harness.methods.priorart._blocks import whole_blocks_first


class SlimInfer(EvictionMethod):
    name = "pa_sliminfer"
    paper: ClassVar[str] = "SlimInfer"
    query_window = 1
    block_size = 32
    recent_blocks = 1  # the block(s) holding the last tokens stay

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        t, b, h = view.n_tokens, self.block_size, view.n_kv_heads
        attn = view.attention(view.queries[:, -1:], reduce="sum")  # (H_q, T); own queries, so causal
        tokens = attn.sum(dim=0, keepdim=True)  # (1, T): one score for the whole layer
        blocks = F.pad(tokens, (0, (-t) % b)).view(1, -1, b).sum(-1)
        if self.recent_blocks:
            blocks[:, -self.recent_blocks:] = float("inf")
        ranked = whole_blocks_first(blocks.expand(h, -1), tokens.expand(h, -1), b)
        return Keep.from_topk(ranked, view.budget, view.valid)
