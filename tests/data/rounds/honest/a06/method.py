"""Observed attention x key distinctiveness (board B_online).

Two query-agnostic signals per KV head, each turned into a percentile and combined by a geometric mean:
the mean attention a token received from every context query that could see it (H2O's accumulated attention,
divided by its number of observers), and how unlike the head's mean key its key is (KeyDiff's cosine
dissimilarity). A token must do reasonably on both to survive.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def observed_attention(view: LayerView) -> torch.Tensor:
    summed = view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)
    qpos = view.query_positions.sort().values
    # number of context queries at or after each token's position (causal observers)
    before = torch.searchsorted(qpos.contiguous(), view.positions.contiguous(), right=False)
    observers = (qpos.numel() - before).clamp_min(1).float()
    return summed / observers


def key_distinctiveness(view: LayerView, valid: torch.Tensor) -> torch.Tensor:
    k = view.keys.float() * valid[..., None]
    anchor = k.sum(dim=1) / valid.sum(dim=1, keepdim=True).clamp_min(1)
    cos = torch.einsum("htd,hd->ht", F.normalize(k, dim=-1), F.normalize(anchor, dim=-1))
    return -cos


def percentile(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    x = x.masked_fill(~valid, float("-inf"))
    order = x.argsort(dim=-1)
    out = torch.zeros_like(x)
    n = valid.sum(dim=-1, keepdim=True).float()
    steps = torch.arange(1, x.shape[-1] + 1, device=x.device, dtype=x.dtype).expand_as(x).contiguous()
    out.scatter_(-1, order, steps)
    return ((out - (x.shape[-1] - n)) / n).clamp(0, 1)


class ObservedDistinct(EvictionMethod):
    name = "observed_distinct"
    query_window = 1 << 20
    sinks = 4
    recent = 16

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        pa = percentile(observed_attention(view), valid)
        pk = percentile(key_distinctiveness(view, valid), valid)
        score = (pa * pk).sqrt()
        newest = view.positions.masked_fill(~valid, -1).amax(dim=1, keepdim=True)
        protect = (view.positions < self.sinks) | (view.positions > newest - self.recent)
        return Keep.from_topk(score.masked_fill(protect & valid, float("inf")), view.budget, view.valid)
