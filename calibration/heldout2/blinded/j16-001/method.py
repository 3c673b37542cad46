import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class TurnPoints(EvictionMethod):
    """Keep the tokens where the key stream turns: one minus the cosine of each key with the key before it,
    plus a share of the neighbours that follow each turn."""

    n_sinks = 4
    follow = 3

    def select(self, view: LayerView) -> Keep:
        k = F.normalize(view.keys.float(), dim=-1)
        turn = torch.ones(k.shape[:2], device=k.device)
        turn[:, 1:] = 1.0 - (k[:, 1:] * k[:, :-1]).sum(dim=-1)
        # a turn also vouches for the tokens right after it (they start the new segment)
        before = F.pad(turn, (self.follow, 0), value=0.0)[:, None, :]
        carry = F.max_pool1d(before, self.follow, stride=1)[:, 0, : turn.shape[1]]
        score = turn + 0.5 * carry
        score[:, : self.n_sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
