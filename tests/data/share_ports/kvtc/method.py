import torch

from harness.api import EvictionMethod, Keep, LayerView


def decorrelate(x):
    centre = x.mean(dim=-2, keepdim=True)
    cov = (x - centre).transpose(-1, -2) @ (x - centre) / x.shape[-2]
    _, axes = torch.linalg.eigh(cov)
    return centre, axes.flip(-1)


def allot(d, total=3 * 64):
    weight = torch.linspace(2.0, 0.5, d)
    return (weight / weight.sum() * total).round().clamp(1, 8)


class CodedSurrogate(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        x = view.keys.float()
        centre, axes = decorrelate(x)
        coords = (x - centre) @ axes
        bits = allot(x.shape[-1])
        levels = 2 ** bits - 1
        span = coords.abs().amax(dim=-2, keepdim=True).clamp_min(1e-6)
        ints = ((coords / span + 1) / 2 * levels).to(torch.int32)
        coded = (ints.float() / levels * 2 - 1) * span
        rebuilt = coded @ axes.transpose(-1, -2) + centre
        q = view.group(view.queries.float(), "mean")
        probs = torch.softmax(torch.einsum("hqd,htd->hqt", q, rebuilt) / x.shape[-1] ** 0.5, dim=-1)
        return Keep.from_topk(probs.sum(dim=1), view.budget, view.valid)
