"""Three shelves: one ranking of all heads' tokens by the closing queries' attention; the top shelf is stored sharp,
the middle shelf as a rough copy, the bottom shelf is thrown out; the attention over the shelved cache decides."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def rough(x, bits=2):
    lo, hi = x.amin(dim=1, keepdim=True), x.amax(dim=1, keepdim=True)
    scale = (hi - lo).clamp_min(1e-6) / (2 ** bits - 1)
    return ((x - lo) / scale).round() * scale + lo


class ThreeShelves(EvictionMethod):
    name = "three_shelves"
    query_window = 16
    top_share = 0.5

    def select(self, view: LayerView) -> Keep:
        h, n = view.n_kv_heads, view.n_tokens
        k = view.keys.float()
        q = view.group(view.queries.float(), "mean")
        heat = torch.softmax(torch.einsum("hqd,hnd->hqn", q, k) * view.model.scale, dim=-1).sum(dim=1)
        flat = heat.flatten().argsort(descending=True)
        top = flat[: int(view.budget * h * self.top_share)]
        middle = flat[int(view.budget * h * self.top_share): view.budget * h]
        shelf = rough(k).reshape(h * n, -1)
        shelf[top] = k.reshape(h * n, -1)[top]
        shelf = shelf.reshape(h, n, -1)
        final = torch.softmax(torch.einsum("hqd,hnd->hqn", q, shelf) * view.model.scale, dim=-1).sum(dim=1)
        kept = torch.zeros(h * n, dtype=torch.bool)
        kept[top] = True
        kept[middle] = True
        final = final.masked_fill(~kept.reshape(h, n), float("-inf"))
        counts = kept.reshape(h, n).sum(dim=1)
        return Keep.from_topk(final, counts, view.valid)
