"""HeadProbe: head-wise budgets from a self-probe's attention entropy, tokens ranked by low key norm.

Heads whose (probed) attention is diffuse need more slots than heads that concentrate on a few tokens,
so the layer's budget is split across KV heads in proportion to the entropy of a probe's attention, with
a floor per head. Inside a head, tokens are ranked by key L2 norm (low norm ~ high attention).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class HeadProbe(EvictionMethod):
    name = "headprobe"
    n_probe = 32
    n_sink = 4
    floor = 0.2  # every head keeps at least this share of the mean per-head budget

    def select(self, view: LayerView) -> Keep:
        keys = view.keys.float()
        n_heads, n, dim = keys.shape
        valid = view.valid_mask()
        budget = min(view.budget, n)
        probe = keys[:, -self.n_probe :, :]
        logits = torch.einsum("hpd,htd->hpt", probe, keys) / dim**0.5
        attn = logits.masked_fill(~valid[:, None, :], float("-inf")).softmax(dim=-1).mean(dim=1)
        entropy = -(attn.clamp_min(1e-12).log() * attn).sum(dim=-1)  # (H,)
        share = entropy / entropy.sum().clamp_min(1e-12)
        floor = int(self.floor * budget)
        total = budget * n_heads
        per_head = (floor + (total - floor * n_heads) * share).floor().long().clamp(max=n)
        remainder = total - int(per_head.sum())
        for h in entropy.argsort(descending=True).tolist():  # rounding slack goes to diffuse heads
            give = min(remainder, n - int(per_head[h]))
            per_head[h] += give
            remainder -= give
        score = -keys.norm(dim=-1)
        score[:, : self.n_sink] = float("inf")
        score[:, -self.n_probe :] = float("inf")
        return Keep.from_topk(score, per_head, valid)
