"""Entropy-tempered last-query attention (board C, decode-time).

TOVA ranks the cache by the current query's attention averaged over heads. A diffuse head adds a near-uniform
layer of mass to that average and blurs the ranking. Here each query head's distribution is first raised to a
power 1 + (its normalised entropy) and renormalised, so diffuse heads are sharpened before the group average;
value norm breaks near-ties. Sinks and a short recent window are kept.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


def tempered(p: torch.Tensor, n_real: int) -> torch.Tensor:
    """Sharpen one head's attention distribution p (T,) by its own normalised entropy."""
    ent = float(-(p * p.clamp_min(1e-12).log()).sum())
    power = 1.0 + ent / math.log(max(n_real, 2))
    sharp = p.clamp_min(0).pow(power)
    return sharp / sharp.sum().clamp_min(1e-12)


class TemperedLastQuery(EvictionMethod):
    name = "tempered_last_query"
    query_window = 1
    sinks = 4
    recent = 8
    value_tie = 1e-4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        attn = view.attention(view.queries[:, -1:])[:, 0]  # (H_q, T), the current query only
        g = view.model.group_size
        vnorm = view.values.float().norm(dim=-1)
        scores = torch.zeros(view.n_kv_heads, view.n_tokens, device=attn.device)
        for h in range(view.n_kv_heads):
            n_real = int(valid[h].sum())
            for j in range(h * g, (h + 1) * g):
                scores[h] += tempered(attn[j] * valid[h], n_real) / g
            scores[h] += self.value_tie * vnorm[h] / vnorm[h][valid[h]].max().clamp_min(1e-6)
            scores[h, : min(self.sinks, n_real)] = float("inf")
            scores[h, max(0, n_real - self.recent): n_real] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
