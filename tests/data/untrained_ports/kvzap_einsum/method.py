"""Echo weight: while the context is echoed back, the loudest echo of each pair (the largest attention it receives
from the echoing queries) is scaled by the length of the pair's value; the highest echo weights survive."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _echo(q: torch.Tensor, k: torch.Tensor, s: float) -> torch.Tensor:
    z = torch.einsum("hnd,htd->hnt", q, k) * s
    return torch.nn.functional.softmax(z, dim=-1)


class EchoWeight(EvictionMethod):
    name = "echo_weight"
    reconstruction_queries = True

    def select(self, view: LayerView) -> Keep:
        h = view.n_kv_heads
        q = view.queries.float().reshape(h, -1, view.keys.shape[-1])
        loud = _echo(q, view.keys.float(), view.model.scale).amax(dim=1)
        length = torch.sqrt((view.values.float() ** 2).sum(-1))
        return Keep.from_topk(loud * length, view.budget, view.valid)
