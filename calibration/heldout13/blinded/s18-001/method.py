"""Coherence-routed block retention (board A).

Question-aware eviction at the granularity of blocks of 16 consecutive entries, which keeps phrases whole. A
block is summarised by one digest key (the mean of its keys) and the question reads the digests: a softmax of
the mean question query against every digest, per query head, averaged over the KV head's group. Blocks are then
routed in two tiers:

- tier 1: the smallest set of blocks that together receive 90 % of the digest attention, plus every block whose
  digest is *unreliable*, i.e. whose keys are incoherent (mean cosine to the block mean below 0.5): a digest
  cannot speak for such a block, so it is not judged by it;
- tier 2: every other block.

Blocks are kept tier by tier in order of digest attention until the budget is spent. The four opening tokens and
the closing 16 prompt tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class CoherenceRouted(EvictionMethod):
    name = "coherence_routed"
    query_window = 16
    question_queries = True
    block = 16
    mass = 0.9
    coherent = 0.5
    opening = 4
    closing = 16

    def _block_scores(self, view: LayerView, h: int, keys: torch.Tensor) -> torch.Tensor:
        n, d = keys.shape
        nb = -(-n // self.block)
        pad = nb * self.block - n
        kb = torch.cat([keys, keys[-1:].expand(pad, d)]) if pad else keys
        kb = kb.view(nb, self.block, d)
        live = (torch.arange(nb * self.block, device=keys.device) < n).view(nb, self.block).float()
        digest = (kb * live[..., None]).sum(dim=1) / live.sum(dim=1, keepdim=True)
        unit = kb / kb.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        dunit = digest / digest.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        coherence = ((unit * dunit[:, None]).sum(dim=-1) * live).sum(dim=1) / live.sum(dim=1)
        g = view.model.group_size
        qbar = view.queries[h * g:(h + 1) * g].float().mean(dim=1)  # (g, D)
        route = ((qbar @ digest.T) * view.model.scale).softmax(dim=-1).mean(dim=0)  # (nb,)
        order = route.argsort(descending=True)
        before = route[order].cumsum(0) - route[order]
        tier1 = torch.zeros(nb, dtype=torch.bool, device=keys.device)
        tier1[order[before < self.mass]] = True
        tier1 |= coherence < self.coherent
        block_score = route + tier1.float() * 10.0
        tok = block_score.repeat_interleave(self.block)[:n]
        return tok - torch.arange(n, device=keys.device).float() * 1e-7  # whole blocks, in order

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            real = valid[h].nonzero().flatten()
            keys = view.keys[h, real].float()
            pos = view.positions[h, real]
            score = self._block_scores(view, h, keys)
            fixed = (pos < self.opening) | (pos > pos.max() - self.closing)
            score = score.masked_fill(fixed, float("inf"))
            k = min(view.budget, real.numel())
            out.append(real[score.topk(k).indices.sort().values])
        return Keep(tuple(out))
