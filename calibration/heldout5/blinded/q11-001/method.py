"""Topic-routed retention (board A)."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class _Topics:
    """Spherical k-means over one head's keys."""

    def __init__(self, keys: torch.Tensor, n_topics: int, rounds: int = 6):
        x = F.normalize(keys.float(), dim=-1)
        n = x.shape[0]
        k = max(1, min(n_topics, n))
        seeds = torch.arange(k, device=x.device) * n // k
        c = x[seeds].clone()
        for _ in range(rounds):
            lab = (x @ c.t()).argmax(dim=1)
            acc = torch.zeros_like(c).index_add_(0, lab, x)
            filled = torch.bincount(lab, minlength=k) > 0
            c = torch.where(filled[:, None], F.normalize(acc, dim=-1), c)
        self.labels = (x @ c.t()).argmax(dim=1)
        self.centers = c
        self.sizes = torch.bincount(self.labels, minlength=k)


class TopicRouted(EvictionMethod):
    name = "topic_routed"
    question_queries = True
    query_window = 8
    tokens_per_topic = 32
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        g = view.model.group_size
        q0 = int(view.query_positions.min())
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            pos = view.positions[h, idx]
            fixed = (pos >= q0) | (torch.arange(idx.numel(), device=idx.device) < self.sinks)
            room = view.budget - int(fixed.sum())
            cand = idx[~fixed]
            if room <= 0 or cand.numel() == 0:
                out.append(idx[fixed][-view.budget:])
                continue
            keys = view.keys[h, cand]
            topics = _Topics(keys, max(2, cand.numel() // self.tokens_per_topic))
            q = view.queries[h * g:(h + 1) * g].reshape(-1, keys.shape[-1]).float()
            mag = keys.float().norm(dim=-1).mean()
            route = torch.softmax(q @ (topics.centers * mag).t() * view.model.scale, dim=-1).sum(dim=0)
            route = route * topics.sizes.float().clamp_min(1).log1p()
            ranked = torch.argsort(route, descending=True)
            fine = (q @ keys.float().t()).amax(dim=0)                # inside a topic: the best single match
            taken = []
            left = room
            for c in ranked.tolist():
                if left <= 0:
                    break
                members = (topics.labels == c).nonzero().flatten()
                if members.numel() == 0:
                    continue
                members = members[torch.argsort(fine[members], descending=True)][:left]
                taken.append(members)
                left -= members.numel()
            chosen = cand[torch.cat(taken)] if taken else cand[:0]
            out.append(torch.cat([chosen, idx[fixed]]).sort().values)
        return Keep(tuple(out))
