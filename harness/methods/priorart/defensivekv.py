"""DefensiveKV (Feng et al., 2025, arXiv 2510.13334, "Taming the Fragility of KV Cache Eviction in LLM
Inference"): SnapKV-style window attention, but aggregated defensively: per query head each window row is
avg-pooled (kernel 5) and renormalised to its own mass, then the score is the *maximum* over the window
queries and the GQA group (worst case) instead of the mean, with the prior correction clamp(min = the head's
mean score). The layer's budget is shared across KV heads by one flattened top-k (Ada-KV paradigm); the
window is always kept. Defaults from the official kvpress fork (FFY0/DefensiveKV: window 32, kernel 5).
Not reproduced: the CriticalKV value-projection stage the official press chains on (needs W_o, which the view
lacks); the layer budgets of Layer-DefensiveKV (uniform budget here).
Settings: pa_defensivekv; pa_defensivekv?head_budgets=False; pa_defensivekv?kernel=1; pa_defensivekv?query_window=64"""

from typing import ClassVar

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class DefensiveKV(EvictionMethod):
    name = "pa_defensivekv"
    paper: ClassVar[str] = "DefensiveKV"
    query_window = 32
    kernel = 5
    head_budgets = True  # Ada-KV flattened top-k across the layer's KV heads

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        window = view.positions >= view.query_positions.min()
        prefix = (valid & ~window).repeat_interleave(view.model.group_size, 0)[:, None, :]
        attn = view.attention() * prefix  # (H_q, w, T): window columns out, as the official slice
        hq, w, t = attn.shape
        mass = attn.sum(-1, keepdim=True)
        pooled = F.avg_pool1d(attn.reshape(hq * w, 1, t), self.kernel, 1, self.kernel // 2).reshape(hq, w, t)
        pooled = pooled * prefix / pooled.mul(prefix).sum(-1, keepdim=True).clamp_min(1e-30) * mass
        scores = view.group(pooled.amax(dim=1), "max")  # worst case over window queries and the group
        keep = valid & ~window
        prior = (scores * keep).sum(-1, keepdim=True) / keep.sum(-1, keepdim=True).clamp_min(1)
        scores = torch.maximum(scores, prior).masked_fill(window, float("inf")).masked_fill(~valid, float("-inf"))
        if not self.head_budgets:
            return Keep.from_topk(scores, view.budget, view.valid)
        total = min(view.budget * view.n_kv_heads, int(valid.sum()))
        flat = scores.flatten().topk(total).indices
        return Keep(tuple(torch.sort(flat[flat // t == h] % t).values for h in range(view.n_kv_heads)))
