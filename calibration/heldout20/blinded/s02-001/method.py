"""Tiered head contracts (board A, question-aware prefill).

Every KV head signs one of three retention contracts for the whole prompt, chosen by how much of the question's
attention each contract would preserve at the head's budget:

  1. "edge"     - the opening anchor tokens plus the freshest stretch of the prompt;
  2. "blend"    - half the budget on the edge tokens, half on the tokens the question looks at most;
  3. "spotlight"- only the tokens the question looks at most.

Contracts are tried in that order (simplest first) and the first one that preserves at least `accept` of the mass of
the best contract is signed. Simple heads thus stay simple, and only heads that really need it are given a fully
attention-ranked cache.
"""

import torch

from harness import EvictionMethod, Keep, LayerView

ANCHORS = 4


def _edge_mask(n_valid: int, k: int, device) -> torch.Tensor:
    m = torch.zeros(n_valid, dtype=torch.bool, device=device)
    a = min(ANCHORS, k, n_valid)
    m[:a] = True
    tail = max(0, k - a)
    if tail:
        m[max(a, n_valid - tail):] = True
    return m


def _spot_mask(mass: torch.Tensor, k: int, exclude: torch.Tensor | None = None) -> torch.Tensor:
    m = torch.zeros_like(mass, dtype=torch.bool)
    src = mass if exclude is None else mass.masked_fill(exclude, float("-inf"))
    k = max(0, min(k, int((~exclude).sum()) if exclude is not None else mass.numel()))
    if k:
        m[src.topk(k).indices] = True
    return m


class TieredHeadContracts(EvictionMethod):
    name = "tiered_contracts"
    query_window = 16
    question_queries = True
    accept = 0.9

    def select(self, view: LayerView) -> Keep:
        mass = view.group(view.attention(reduce="sum"), "sum")   # (H_kv, T) question + window mass per key
        live = view.valid_mask()
        picks = []
        for h in range(view.n_kv_heads):
            idx = live[h].nonzero().squeeze(1)
            m = mass[h, idx]
            k = min(view.budget, idx.numel())
            edge = _edge_mask(idx.numel(), k, m.device)
            half = _edge_mask(idx.numel(), k // 2, m.device)
            blend = half | _spot_mask(m, k - int(half.sum()), exclude=half)
            spot = _spot_mask(m, k)
            contracts = [edge, blend, spot]
            kept_mass = torch.stack([m[c].sum() for c in contracts])
            bar = self.accept * kept_mass.max()
            signed = next(c for c, km in zip(contracts, kept_mass) if km >= bar)
            picks.append(idx[signed])
        return Keep(tuple(p.sort().values for p in picks))
