"""Constellation recall (board A, question-aware prefill).

Keys that point the same way are attended together. Constellation recall groups each KV head's context keys into
16 constellations (a few Lloyd steps on unit-normalised keys, seeded from evenly spaced keys), lets the question and
the last prompt rows vote for constellations through a softmax over the constellation centres (with each
constellation's log-size as a prior), and fills the budget constellation by constellation, best first; inside a
constellation tokens are ordered by their best exact logit from the same rows. Small budgets use a coarse, evenly
spread cover of the context instead, which is cheaper than clustering when only a few dozen tokens survive.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class ConstellationRecall(EvictionMethod):
    name = "constellation_recall"
    query_window = 16
    question_queries = True
    stars = 16
    steps = 6
    cover_below = 48
    opening = 2

    @staticmethod
    def _spread(view: LayerView) -> Keep:
        out = []
        mask = view.valid_mask()
        for h in range(view.n_kv_heads):
            n = int(mask[h].sum())
            k = min(view.budget, n)
            idx = torch.linspace(0, n - 1, k).round().long().unique() if k > 0 else torch.zeros(0, dtype=torch.long)
            out.append(idx.to(view.keys.device))
        return Keep(tuple(out))

    def _constellations(self, k: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        unit = torch.nn.functional.normalize(k, dim=-1)
        c = unit[torch.linspace(0, n - 1, self.stars).long()].clone()
        for _ in range(self.steps):
            lab = (unit @ c.T).argmax(-1)
            for j in range(c.shape[0]):
                members = unit[lab == j]
                if members.shape[0]:
                    c[j] = torch.nn.functional.normalize(members.mean(0), dim=0)
        lab = (unit @ c.T).argmax(-1)
        centre = torch.stack([k[lab == j].mean(0) if bool((lab == j).any()) else torch.zeros_like(k[0])
                              for j in range(c.shape[0])])
        return lab, centre

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.budget < self.cover_below:
            return self._spread(view)
        g = view.model.group_size
        mask = view.valid_mask()
        scores = torch.full(view.keys.shape[:2], float("-inf"), device=view.keys.device)
        for h in range(view.n_kv_heads):
            n = int(mask[h].sum())
            k = view.keys[h, :n].float()
            q = view.queries[h * g:(h + 1) * g].float().reshape(-1, k.shape[-1])
            lab, centre = self._constellations(k, n)
            size = torch.bincount(lab, minlength=self.stars).float()
            prior = torch.where(size > 0, size.log(), torch.full_like(size, -1e9))
            vote = ((q @ centre.T) * view.model.scale + prior).softmax(-1).sum(0)      # (stars,)
            exact = (q @ k.T * view.model.scale).amax(0)                               # (n,)
            inner = (exact - exact.min()) / (exact.max() - exact.min() + 1e-6)
            order = vote.argsort(descending=True).argsort().float()                  # rank of each constellation
            scores[h, :n] = (self.stars - order[lab]) * 2.0 + inner
        scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        scores[:, : self.opening] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
