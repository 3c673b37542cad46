"""WindowKV (Zuo et al., 2025, arXiv 2503.17922): the review part of the prompt (all but the last ``suffix``
tokens) is cut into windows of 8 tokens; each window is scored from the suffix queries' attention (summed over
the suffix queries, per query head), and the lowest windows are dropped whole until the review part fits the
budget, the same windows for every head; the suffix is kept. Window score (official code, optim996/WindowKV):
"max" = mean over query heads of the top (window // 2) token scores in the window (suffix 32); "average" = mean
over the window's scores (suffix 16). The task classifier that picks the strategy (a BERT model) is not
available: "max" by default. A remainder under one window is filled with the best tokens of the next window
(the official code leaves it empty). Layer-group index sharing and the layer budget schedule are not reproduced.
Settings: pa_windowkv; pa_windowkv?strategy=average&query_window=16; pa_windowkv?window_size=16"""

from typing import ClassVar

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView
from harness.methods.priorart._blocks import whole_blocks_first


class WindowKV(EvictionMethod):
    name = "pa_windowkv"
    paper: ClassVar[str] = "WindowKV"
    query_window = 32  # suffix_max (32); the "average" strategy uses suffix_avg (16)
    window_size = 8
    strategy = "max"

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(reduce="sum")  # (H_q, T): summed over the suffix queries
        suffix = view.positions >= view.query_positions.min()
        t, w = view.n_tokens, self.window_size
        per_head = F.pad(attn.masked_fill(suffix.repeat_interleave(view.model.group_size, 0), 0.0), (0, (-t) % w))
        per_head = per_head.view(attn.shape[0], -1, w)  # (H_q, n_windows, w)
        if self.strategy == "max":
            win = per_head.topk(max(1, w // 2), dim=-1).values.mean(dim=(0, 2))
        else:
            win = per_head.mean(dim=(0, 2))
        h = view.n_kv_heads
        tokens = attn.sum(dim=0, keepdim=True).expand(h, t)
        ranked = whole_blocks_first(win[None].expand(h, -1), tokens, w).masked_fill(suffix, float("inf"))
        return Keep.from_topk(ranked, view.budget, view.valid)
