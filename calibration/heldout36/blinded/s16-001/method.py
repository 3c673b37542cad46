"""Key Kinks: keep tokens where the key trajectory bends, plus what the context's end attends to.

Consecutive keys inside a phrase move smoothly; a new entity, number or field changes the key abruptly.
Each token's kink is the size of the second difference of its (unit-normalised) key along the sequence,
k[t-1] - 2 k[t] + k[t+1], averaged over heads of a group's KV head. The kink is ranked against the
layer's tokens and blended with the rank of window attention from the context's last positions (the
question is unknown on board B).
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _rank01(x: torch.Tensor) -> torch.Tensor:
    r = x.argsort(dim=-1).argsort(dim=-1).float()
    return r / max(1, x.shape[-1] - 1)


class KeyKinks(EvictionMethod):
    name = "key_kinks"
    query_window = 32
    kink_share = 0.4
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        k = F.normalize(view.keys.float(), dim=-1)
        padded = F.pad(k.transpose(1, 2), (1, 1), mode="replicate").transpose(1, 2)
        kink = (padded[:, :-2] - 2 * padded[:, 1:-1] + padded[:, 2:]).norm(dim=-1)
        score = self.kink_share * _rank01(kink)
        if view.queries is not None:
            att = view.group(view.attention(reduce="sum"), "mean")
            att = F.max_pool1d(att[:, None], 5, stride=1, padding=2)[:, 0]
            score = score + (1 - self.kink_share) * _rank01(att)
            score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        score = score.masked_fill(view.positions < self.sinks, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
