"""Gazetteer: index the context by what its keys say, look the question up in the index, then read the pages found.

Each KV head's keys are brought back to a position-free frame (the layer's rotation undone at each key's own
position) so that two mentions of the same thing far apart land near each other, and grouped into ``n_groups``
gazetteer entries by a few rounds of k-means. The question rows look up the entries first: an entry's weight is
the softmax, over entries, of the question's match with its centre plus the log of its size (the mass a whole group
would draw). Entries are opened in order of weight until they hold the budget, and inside the opened entries keys
are ranked by the question's exact attention. The question rows and the first four entries are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _index(points: torch.Tensor, n_groups: int, rounds: int) -> torch.Tensor:
    """Group labels (T,) of a few rounds of k-means, started from evenly spaced points."""
    t = points.shape[0]
    centres = points[torch.linspace(0, t - 1, n_groups).round().long()].clone()
    labels = torch.zeros(t, dtype=torch.long)
    for _ in range(rounds):
        reach = 2 * points @ centres.T - (centres * centres).sum(dim=1)       # argmax = nearest centre
        labels = reach.argmax(dim=1)
        member = F.one_hot(labels, n_groups).float()                           # (T, groups)
        size = member.sum(dim=0)
        moved = (member.T @ points) / size.clamp_min(1)[:, None]
        centres = torch.where(size[:, None] > 0, moved, centres)
    return labels


class Gazetteer(EvictionMethod):
    name = "gazetteer"
    query_window = 8
    question_queries = True
    per_group = 32          # about this many keys per entry
    rounds = 6
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        exact = view.group(view.attention(reduce="mean"), "mean")               # (H_kv, T)
        valid = view.valid_mask()
        pinned = (view.positions < self.n_sink) | (view.positions >= view.query_positions.min())
        out = []
        for h in range(view.n_kv_heads):
            live = torch.nonzero(valid[h] & ~pinned[h]).flatten()
            fixed = torch.nonzero(valid[h] & pinned[h]).flatten()
            room = view.budget - int(fixed.numel())
            if room <= 0 or live.numel() == 0:
                out.append(fixed[-view.budget:] if room <= 0 else fixed)
                continue
            keys = view.keys[h, live].float()
            n_groups = max(2, min(live.numel(), live.numel() // self.per_group))
            labels = _index(keys, n_groups, self.rounds)
            member = F.one_hot(labels, n_groups).float()
            size = member.sum(dim=0)
            centres = (member.T @ keys) / size.clamp_min(1)[:, None]
            q = view.queries[h * g:(h + 1) * g].float().flatten(0, 1)             # (g * N, D)
            match = (q @ centres.T) * view.model.scale + size.clamp_min(1).log()
            match = match.masked_fill(size == 0, float("-inf"))
            weight = match.softmax(dim=-1).mean(dim=0)                             # (groups,)
            order = weight.argsort(descending=True)
            held = torch.cumsum(size[order], 0)
            n_open = int((held < room).sum()) + 1
            opened = torch.zeros(n_groups, dtype=torch.bool)
            opened[order[:n_open]] = True
            rank = exact[h, live] + opened[labels].float() * 2.0                   # opened entries first
            chosen = live[rank.topk(min(room, live.numel())).indices]
            out.append(torch.cat([fixed, chosen]).sort().values)
        return Keep(tuple(out))
