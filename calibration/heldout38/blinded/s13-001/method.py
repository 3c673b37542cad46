"""Topic Islands: the keys of a long context fall into a few semantic neighbourhoods; the question usually needs
whole neighbourhoods, not scattered tokens. We map each KV head's keys into islands, ask the question which
islands it leans towards, and keep islands whole in that order, plus the opening tokens and the question's
own tail."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class TopicIslands(EvictionMethod):
    name = "topic_islands"
    question_queries = True
    per_island = 32      # about one island per this many tokens
    rounds = 6
    openers = 4
    tail = 16

    def _islands(self, k: torch.Tensor, n_isl: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Unit keys (T, D) -> (labels (T,), unit centres (C, D)): cosine Lloyd rounds from evenly spread seeds."""
        seeds = torch.linspace(0, k.shape[0] - 1, n_isl).round().long()
        centres = k[seeds].clone()
        for _ in range(self.rounds):
            labels = (k @ centres.T).argmax(dim=1)
            member = torch.nn.functional.one_hot(labels, n_isl).float()     # (T, C)
            summed = member.T @ k                                          # (C, D)
            empty = member.sum(dim=0) == 0
            summed[empty] = centres[empty]
            centres = torch.nn.functional.normalize(summed, dim=-1)
        return (k @ centres.T).argmax(dim=1), centres

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        g = view.model.group_size
        q = view.queries.float()
        picks = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            m, budget = idx.numel(), min(view.budget, int(valid[h].sum()))
            k = view.keys[h, idx].float()
            unit = torch.nn.functional.normalize(k, dim=-1)
            n_isl = max(2, min(m, m // self.per_island))
            labels, centres = self._islands(unit, n_isl)
            qh = q[h * g:(h + 1) * g].reshape(-1, q.shape[-1])             # the group's question queries
            size = torch.bincount(labels, minlength=n_isl).float()
            lean = torch.logsumexp(qh @ centres.T * view.model.scale * k.norm(dim=-1).mean(), dim=0)
            lean = lean + size.clamp_min(1).log()                           # mass the island could hand out
            token = torch.logsumexp(qh @ k.T * view.model.scale, dim=0)     # (m,) inside-island tie-break
            order = torch.arange(m, device=k.device)
            guard = (order < self.openers) | (order >= m - self.tail)
            rank = lean[labels] * 1e3 + token
            rank = rank.masked_fill(guard, float("inf"))
            picks.append(idx[rank.topk(budget).indices].sort().values)
        return Keep(tuple(picks))
