"""ZigZagKV-style uncertainty budgets, moved from layers to KV heads (board B_online). This is a port.

Port of ZigZagKV (Zhong et al., 2024, "ZigZagKV: Dynamic KV Cache Compression for Long-context Modeling based on
Layer Uncertainty", arXiv 2412.09036), training-free as in the paper. ZigZagKV measures how many tokens a layer needs to
retain a target share of its attention mass (its "uncertainty") and gives each layer a budget in proportion to that
count; tokens are then chosen by observation-window attention (SnapKV-style).

Deviations:
- The harness asks for per-layer budgets (``layer_budgets``) before any attention is computed, so the allocation the
  paper does across layers is done here across the KV heads of each layer: a head's share of the layer's total is
  proportional to the number of tokens it needs to reach 90 % of its window attention mass, with a floor of a quarter
  of the mean budget per head. Layers keep the uniform budget.
- Board B_online has no question: the observation window is the context's last 32 rows (query-agnostic).
- Selection inside a head is SnapKV's: window attention summed over rows, averaged over the group, max-pooled
  (kernel 7), the window itself kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class ZigZagHeadPort(EvictionMethod):
    name = "zigzag_head_port"
    query_window = 32
    mass_target = 0.90
    floor_share = 0.25

    def _needed(self, att: torch.Tensor) -> torch.Tensor:
        """att (H_kv, T) -> tokens each head needs to reach ``mass_target`` of its mass."""
        p = att / att.sum(-1, keepdim=True).clamp_min(1e-12)
        srt = p.sort(-1, descending=True).values.cumsum(-1)
        return (srt < self.mass_target).sum(-1) + 1

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention().sum(1), "mean")                     # (H_kv, T)
        h_kv = view.n_kv_heads
        total = view.budget * h_kv
        floor = int(view.budget * self.floor_share)
        need = self._needed(att).float()
        share = need / need.sum()
        k = (floor + share * (total - floor * h_kv)).floor().long()
        k = k.clamp(max=view.n_tokens)
        score = F.max_pool1d(att[:, None], 7, stride=1, padding=3)[:, 0]
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(score, k, view.valid)
