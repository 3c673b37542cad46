"""Echo Damping: window attention, but a token that merely repeats its predecessor's key gets half its score."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class EchoDamping(EvictionMethod):
    name = "echo_damping"
    query_window = 32
    echo = 0.97

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = view.group(view.attention().sum(dim=1), "mean")
        k = F.normalize(view.keys.float(), dim=-1)
        prev = (k[:, 1:] * k[:, :-1]).sum(-1)                   # cosine with the previous key
        damp = torch.ones_like(s)
        damp[:, 1:] = torch.where(prev > self.echo, 0.5, 1.0)
        s = F.max_pool1d((s * damp)[:, None], 5, stride=1, padding=2)[:, 0]
        s = s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)
