"""Grown spans (board A): keep the question's attention peaks with as much of their neighbourhood as their keys
say belongs to them.

Pooling (SnapKV) and fixed chunks (ChunkKV) keep a fixed neighbourhood around every strong token. Here each KV
head takes its strongest remaining token as a seed and grows a span left and right, one token at a time, while
the neighbour's key has cosine at least ``bond`` with the seed's key (at most ``reach`` tokens each way and never
past the budget); then the next seed. A number in a needle sentence pulls in the words that belong to it and
stops where the key geometry changes, instead of taking a fixed seven tokens. The question's own tokens and the
first ``n_sink`` tokens are kept from the start.

Builds on: SnapKV (Li et al., 2024, arXiv 2404.14469) for the question attention, summed over the question rows
and averaged over the query heads of each KV head; ChunkKV (Liu et al., 2025, arXiv 2502.00299) for keeping
contiguous pieces rather than isolated tokens; StreamingLLM (Xiao et al., 2023, arXiv 2309.17453) for the sink
tokens. The span that stops where the key similarity to its seed drops is, as far as we know, new.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class GrownSpans(EvictionMethod):
    name = "grown_spans"
    question_queries = True
    bond = 0.5
    reach = 6
    n_sink = 4

    def _grow(self, strength: torch.Tensor, unit: torch.Tensor, taken: torch.Tensor, room: int) -> list[int]:
        """Seeds and their spans for one head, until ``room`` tokens are taken (``taken`` is updated)."""
        t = strength.numel()
        order = strength.masked_fill(taken, float("-inf")).argsort(descending=True).tolist()
        picked: list[int] = []
        for seed in order:
            if room <= 0:
                break
            if taken[seed]:
                continue
            taken[seed] = True
            picked.append(seed)
            room -= 1
            for direction in (-1, 1):
                j = seed
                for _ in range(self.reach):
                    j += direction
                    if room <= 0 or j < 0 or j >= t or taken[j]:
                        break
                    if float(unit[j] @ unit[seed]) < self.bond:
                        break
                    taken[j] = True
                    picked.append(j)
                    room -= 1
        return picked

    def select(self, view: LayerView) -> Keep:
        t, h = view.n_tokens, view.n_kv_heads
        if view.budget >= t or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        strength = view.group(view.attention(reduce="sum"), "mean")
        unit = F.normalize(view.keys.float(), dim=-1)
        valid = view.valid_mask()
        fixed = ((view.positions >= view.query_positions.min()) | (view.positions < self.n_sink)) & valid
        out = []
        for i in range(h):
            budget = min(view.budget, int(valid[i].sum()))
            base = torch.nonzero(fixed[i]).flatten()[-budget:] if budget else fixed.new_zeros(0, dtype=torch.long)
            taken = ~valid[i].clone()
            taken[base] = True
            grown = self._grow(strength[i], unit[i], taken, budget - base.numel())
            extra = torch.tensor(grown, dtype=torch.long, device=base.device)
            out.append(torch.cat([base, extra]).sort().values)
        return Keep(tuple(out))
