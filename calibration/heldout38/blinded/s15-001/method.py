"""Quiet Keys: K-norm judged against the neighbourhood, not the whole cache.

K-norm (Devoto et al., 2024) keeps the keys with the smallest L2 norm, which tend to draw the most attention.
Key norms drift along a sequence (with position, with the kind of text), so a global threshold keeps whole
stretches and drops others. Here a key is scored by how much quieter it is than its neighbours: the median
norm of the 16 keys around it (8 on each side) minus its own norm, divided by that median. No attention is
computed, so the rule is the same at prefill and at every decode cap. The first 4 tokens (StreamingLLM's
sinks, Xiao et al., 2023) and the newest 16 are kept outright.
"""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class QuietKeys(EvictionMethod):
    name = "quiet_keys"
    reach = 8
    sinks = 4
    newest = 16

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        norm = view.keys.float().norm(dim=-1)                           # (H_kv, T)
        norm = torch.where(valid, norm, norm.masked_fill(~valid, 0).sum(1, keepdim=True)
                           / valid.sum(1, keepdim=True).clamp_min(1))
        r = self.reach
        padded = F.pad(norm[:, None], (r, r), mode="replicate")[:, 0]  # (H_kv, T + 2r)
        win = padded.unfold(1, 2 * r + 1, 1)                            # (H_kv, T, 2r + 1)
        around = torch.cat([win[..., :r], win[..., r + 1:]], dim=-1).median(dim=-1).values
        score = (around - norm) / around.clamp_min(1e-6)
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, :min(self.sinks, n)] = float("inf")
            score[h, max(0, n - self.newest):n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
