"""Consensus heads: heads are sorted into a few groups by the shape of their attention over the context (unit rows,
nearest group centre); a group scores the context once, by its members' average."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class ConsensusHeads(EvictionMethod):
    name = "consensus_heads"
    query_window = 16
    n_groups = 4
    rounds = 5

    def select(self, view: LayerView) -> Keep:
        att = view.attention(reduce="sum")                                  # (H_q, T)
        shape = F.normalize(att, dim=-1)
        centres = shape[: self.n_groups].clone()
        for _ in range(self.rounds):
            sim = shape @ F.normalize(centres, dim=-1).T
            member = sim.argmax(dim=-1)
            centres = torch.stack([shape[member == c].mean(0) if (member == c).any() else centres[c]
                                   for c in range(self.n_groups)])
        group_score = torch.stack([att[member == c].mean(0) for c in range(self.n_groups)])
        per_head = group_score[member]
        return Keep.from_topk(view.group(per_head, "max"), view.budget, view.valid)
