"""Window attention with smoothed scores, window kept."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SpreadKV(EvictionMethod):
    name = "spreadkv"
    query_window = 48
    kernel = 5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(reduce="sum")               # (H_q, T)
        scores = view.group(attn, "mean")                 # (H_kv, T)
        scores = F.avg_pool1d(scores[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                              count_include_pad=False)[:, 0]
        assert view.query_positions is not None
        window = view.positions >= view.query_positions.min()
        scores = scores.masked_fill(window, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
