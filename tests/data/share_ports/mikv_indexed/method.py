import torch

from harness.api import EvictionMethod, Keep, LayerView


class Blend(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        keys = view.keys.float()
        attn = view.attention(reduce="sum")
        first = view.group(attn, "mean")
        top = first.topk(min(view.budget // 4 + 1, first.shape[-1]), dim=-1).indices
        scale = keys.abs().amax(dim=-1, keepdim=True).clamp_min(1e-6) / 7
        cache = (keys / scale).round() * scale
        for h in range(keys.shape[0]):
            cache[h, top[h]] = keys[h, top[h]]
        q = view.group(view.queries.float(), "mean")
        second = torch.einsum("hqd,htd->hqt", q, cache).softmax(dim=-1).sum(dim=1)
        return Keep.from_topk(second, view.budget, view.valid)
