import torch

from harness.api import EvictionMethod, Keep, LayerView


def lloyd(x, k, steps=6):
    c = x[:, torch.linspace(0, x.shape[1] - 1, k).long()]
    for _ in range(steps):
        a = torch.cdist(x, c).argmin(dim=-1)
        onehot = torch.nn.functional.one_hot(a, k).float()
        c = onehot.transpose(1, 2) @ x / onehot.sum(dim=1)[..., None].clamp_min(1.0)
    return c, a


class Codebook(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        rope = view.model.rope(view.layer)
        pos = view.positions[0]
        flat = rope.apply(view.keys.float(), pos * -1)
        cent, idx = lloyd(flat, 32)
        decoded = torch.gather(cent, 1, idx[..., None].expand(-1, -1, flat.shape[-1]))
        again = rope.apply(decoded, pos)
        q = view.group(view.queries.float(), "mean")
        p = torch.softmax(q @ again.transpose(1, 2) / flat.shape[-1] ** 0.5, dim=-1)
        return Keep.from_topk(p.sum(dim=1), view.budget, view.valid)
