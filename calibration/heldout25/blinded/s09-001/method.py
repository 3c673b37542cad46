"""Running-surprise keys (board B_online, query-agnostic prefill).

Builds on KeyDiff (Park et al., 2025, arXiv:2504.15364), which keeps the keys least similar to the mean key of
the whole cache, and on LagKV (Liang et al., 2025, arXiv:2504.04704), which compares a partition with the next
one. Both compare a token with statistics that include its future. Here a token is compared only with what came
*before* it: a slowly decaying running mean of the earlier keys of its head. A key that breaks with the recent
run of keys (a new entity, a number, a needle) is surprising; one that continues it is not. No attention is used.
The first 4 and the newest 16 tokens are kept, as in StreamingLLM (arXiv:2309.17453).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class RunningSurprise(EvictionMethod):
    name = "running_surprise"
    decay = 0.9            # per-token decay of the running mean of earlier keys
    sinks = 4
    recent = 16

    def _surprise(self, keys: torch.Tensor) -> torch.Tensor:
        """(T, D) -> (T,): 1 - cosine between each key and the running mean of the keys before it."""
        unit = F.normalize(keys.float(), dim=-1)
        t = unit.shape[0]
        # running mean as a causal exponential filter: m_i = sum_{j<i} decay^(i-1-j) u_j (normalised below)
        steps = torch.arange(t, dtype=torch.float32, device=unit.device)
        scores = torch.empty(t, device=unit.device)
        scores[0] = 0.0
        block = 256
        carry = torch.zeros(unit.shape[1], device=unit.device)
        for s in range(0, t, block):
            e = min(t, s + block)
            i = steps[s:e, None]
            j = steps[None, s:e]
            w = torch.where(j < i, self.decay ** (i - 1 - j), torch.zeros(()))
            within = w @ unit[s:e]
            prior = (self.decay ** (steps[s:e] - s))[:, None] * carry[None, :]
            mean = within + prior
            scores[s:e] = 1.0 - F.cosine_similarity(unit[s:e], mean + 1e-9, dim=-1)
            carry = self.decay ** (e - s) * carry + (self.decay ** (e - 1 - steps[s:e]))[:, None].mul(unit[s:e]).sum(0)
        scores[0] = 0.0
        return scores

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        score = torch.full(view.keys.shape[:2], float("-inf"), device=view.keys.device)
        for h in range(view.n_kv_heads):
            live = valid[h].nonzero().flatten()
            score[h, live] = self._surprise(view.keys[h, live])
        order = torch.arange(view.n_tokens, device=score.device)
        n_live = valid.sum(-1, keepdim=True)
        score = score.masked_fill((order < self.sinks) | (order >= n_live - self.recent), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
