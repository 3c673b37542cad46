"""MagicPIG-style LSH sampling turned into decode-time eviction (board C).

Port of MagicPIG (Chen et al., 2024, "MagicPIG: LSH Sampling for Efficient LLM Generation", arXiv 2410.16179).
MagicPIG hashes keys and queries with SimHash (K random hyperplanes per table, L tables); a key is sampled for a
query when their codes collide in at least two tables, and the sampled keys are reweighted by their sampling
probability u(q, k) = 1 - (1 - p^K)^L - L p^K (1 - p^K)^(L - 1), p = 1 - angle(q, k) / pi, to give an unbiased
estimate of attention; the first tokens (sinks) and a local window stay static.

Port (this harness evicts, MagicPIG samples per step): each time a layer reaches its cap, every query since the
previous round (the newest `query_window` queries) draws its LSH sample; a cached token scores the
importance-weighted attention it receives over those queries (exp(q.k * scale) / u, normalised per query over
its sample), summed over the KV head's query heads; 4 sinks and the newest eighth of the budget are kept.
K = 8, L = 64 (the paper uses K = 10, L = 150 at 128K contexts; smaller here for 2K-4K caps).
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class MagicPIGEviction(EvictionMethod):
    name = "magicpig_eviction"
    query_window = 64
    bits = 8          # K: hyperplanes per table
    tables = 64       # L
    min_hits = 2      # collisions needed to be sampled
    n_sink = 4
    recent_frac = 0.125

    def _planes(self, dim: int, device: torch.device) -> torch.Tensor:
        gen = torch.Generator().manual_seed(2410_16179 % 100000 + dim)
        return torch.randn(self.tables * self.bits, dim, generator=gen).to(device)

    def _codes(self, x: torch.Tensor, planes: torch.Tensor) -> torch.Tensor:
        """x (..., D) -> (..., L) integer SimHash codes, one per table."""
        bits = (x.float() @ planes.t() > 0).long().view(*x.shape[:-1], self.tables, self.bits)
        weights = 2 ** torch.arange(self.bits, device=x.device)
        return (bits * weights).sum(dim=-1)

    def _sample_prob(self, cos: torch.Tensor) -> torch.Tensor:
        p = 1 - torch.arccos(cos.clamp(-1, 1)) / torch.pi
        pk = p ** self.bits
        miss = (1 - pk) ** self.tables
        one = self.tables * pk * (1 - pk) ** (self.tables - 1)
        return (1 - miss - one).clamp_min(1e-6)

    def scores(self, view: LayerView) -> torch.Tensor:
        planes = self._planes(view.keys.shape[-1], view.keys.device)
        g = view.model.group_size
        valid = view.valid_mask()
        kcode = self._codes(view.keys, planes)                                 # (H_kv, T, L)
        qcode = self._codes(view.queries, planes)                              # (H_q, N, L)
        out = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        qpos = view.query_positions
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
            q = view.queries[h * g:(h + 1) * g].float()                        # (g, N, D)
            hits = (qcode[h * g:(h + 1) * g, :, None, :] == kcode[h][None, None]).sum(dim=-1)  # (g, N, T)
            sampled = (hits >= self.min_hits) & valid[h][None, None] & (view.positions[h][None, None] <= qpos[None, :, None])
            cos = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).t()
            logit = (q @ k.t()) * view.model.scale
            logit = logit - logit.amax(dim=-1, keepdim=True)
            weight = torch.exp(logit) / self._sample_prob(cos)
            weight = weight.masked_fill(~sampled, 0.0)
            weight = weight / weight.sum(dim=-1, keepdim=True).clamp_min(1e-12)
            out[h] = weight.sum(dim=(0, 1))
        return out

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self.scores(view)
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        recent = max(1, int(view.budget * self.recent_frac))
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, : min(self.n_sink, n)] = float("inf")
            score[h, max(0, n - recent): n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
