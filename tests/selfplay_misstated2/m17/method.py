"""Question attention with local smoothing (board A)."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class DepthEcho(EvictionMethod):
    name = "depth_echo"
    question_queries = True
    query_window = 16
    kernel = 3
    n_sink = 4

    def setup(self, model: ModelInfo) -> None:
        self.group_size = model.group_size

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        attn = view.group(view.attention(reduce="sum"), "mean")            # (H_kv, T)
        attn = attn.masked_fill(~valid, 0.0)
        attn = attn / attn.sum(dim=1, keepdim=True).clamp_min(1e-12)
        scores = F.avg_pool1d(attn[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                              count_include_pad=False)[:, 0]
        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
