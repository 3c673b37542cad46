"""Window pull per layer: every layer chooses its own tokens from the closing queries' pooled attention, with the
layer index only deepening the pooling."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class WindowPull(EvictionMethod):
    name = "window_pull"
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        h = view.n_kv_heads
        q = view.queries.float().reshape(h, -1, view.keys.shape[-1])
        att = torch.softmax(torch.einsum("hqd,hnd->hqn", q, view.keys.float()) * view.model.scale, dim=-1)
        size = 5 if view.layer < 4 else 9
        smooth = torch.nn.functional.max_pool1d(att.sum(dim=1)[:, None], size, 1, size // 2)[:, 0]
        return Keep.from_topk(smooth, view.budget, view.valid)
