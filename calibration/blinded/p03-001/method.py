import math

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView, ModelInfo


def _smooth(x: torch.Tensor, k: int, how: str) -> torch.Tensor:
    if how == "avgpool":
        return F.avg_pool1d(x, kernel_size=k, padding=k // 2, stride=1)
    if how == "maxpool":
        return F.max_pool1d(x, kernel_size=k, padding=k // 2, stride=1)
    raise ValueError("unknown smoothing")


def _obs_scores(q: torch.Tensor, keys: torch.Tensor, w: int, g: int) -> torch.Tensor:
    d = q.shape[-1]
    rep = keys.repeat_interleave(g, dim=0)
    aw = torch.matmul(q[..., -w:, :], rep.transpose(1, 2)) / math.sqrt(d)
    mask = torch.full((w, w), torch.finfo(aw.dtype).min)
    mc = torch.arange(mask.size(-1))
    mask.masked_fill_(mc < (mc + 1).view(mask.size(-1), 1), 0)
    aw[:, -w:, -w:] += mask[None, :, :]
    aw = torch.nn.functional.softmax(aw, dim=-1, dtype=torch.float32)
    total = aw[:, -w:, :-w].sum(dim=-2)
    return total.reshape(keys.shape[0], g, -1).mean(dim=1)


class Taper(EvictionMethod):
    name = "taper"
    query_window = 8
    ks = 7
    how = "maxpool"
    steepness = 20

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        w = self.query_window
        lo = (mean_budget - w) // self.steepness
        hi = (mean_budget - w) * 2 - lo
        if hi >= n_tokens - w:
            hi = n_tokens - w
            lo = (mean_budget - w) * 2 - hi
        stride = (hi - lo) // (model.n_layers - 1)
        return [hi - i * stride + w for i in range(model.n_layers)]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        w = view.queries.shape[1]
        cache = _smooth(_obs_scores(view.queries, view.keys, w, view.model.group_size), self.ks, self.how)
        cap = max(0, view.budget - w)
        idx = cache.topk(cap, dim=-1).indices
        tail = torch.arange(view.n_tokens - w, view.n_tokens).expand(idx.shape[0], -1)
        return Keep(tuple(torch.cat([idx, tail], dim=-1)))
