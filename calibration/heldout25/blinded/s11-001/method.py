"""Topic pockets (board B_online, query-agnostic prefill).

The context's keys fall into pockets of related entries (a topic, a record, a list). Deciding pocket by pocket is
steadier than deciding token by token: the pockets are found by spherical k-means on a head's keys, each pocket
is given a relevance, and pockets are admitted whole in order of relevance until the budget is spent; the last
pocket that does not fit contributes its entries closest to its centre.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class _Pockets:
    def __init__(self, keys: torch.Tensor, n: int, iters: int, seed: int) -> None:
        unit = F.normalize(keys.float(), dim=-1)
        g = torch.Generator().manual_seed(seed)
        n = max(1, min(n, unit.shape[0]))
        start = torch.randperm(unit.shape[0], generator=g)[:n].to(unit.device)
        centre = unit[start].clone()
        for _ in range(iters):
            label = (unit @ centre.T).argmax(-1)
            summed = torch.zeros_like(centre).index_add_(0, label, unit)
            centre = torch.where(summed.norm(dim=-1, keepdim=True) > 0, F.normalize(summed, dim=-1), centre)
        self.unit, self.centre = unit, centre
        self.label = (unit @ centre.T).argmax(-1)
        self.size = torch.bincount(self.label, minlength=n)


class TopicPockets(EvictionMethod):
    name = "topic_pockets"
    query_window = 64
    pocket_size = 16         # tokens per pocket on average
    iters = 5
    keep_window = True

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        valid = view.valid_mask()
        first_q = int(view.query_positions.min())
        probe = view.group(view.queries.float().mean(dim=1), "mean")          # (H_kv, D)
        picks = []
        for h in range(view.n_kv_heads):
            live = valid[h].nonzero().flatten()
            pos = view.positions[h, live]
            cut = max(first_q, int(pos.max()) + 1 - view.budget // 4)       # at most a quarter for the window
            body = live[pos < cut]
            window = live[pos >= cut] if self.keep_window else live[:0]
            room = view.budget - window.numel()
            if room <= 0 or body.numel() == 0:
                picks.append(live[pos.argsort(descending=True)[: view.budget]].sort().values)
                continue
            pk = _Pockets(view.keys[h, body], max(1, body.numel() // self.pocket_size), self.iters,
                          seed=view.layer * 97 + h)
            relevance = pk.centre @ probe[h].to(pk.centre.device)
            chosen = []
            for c in relevance.argsort(descending=True).tolist():
                members = (pk.label == c).nonzero().flatten()
                if members.numel() <= room:
                    chosen.append(members)
                    room -= members.numel()
                elif room > 0:
                    near = (pk.unit[members] @ pk.centre[c]).topk(room).indices
                    chosen.append(members[near])
                    room = 0
                if room == 0:
                    break
            kept = torch.cat(chosen) if chosen else body[:0]
            picks.append(torch.cat([body[kept], window]).sort().values)
        return Keep(tuple(picks))
