"""CriticalKV port (Feng et al., 2025, "Identify Critical KV Cache in LLM Inference from an Output Perturbation
Perspective", arXiv 2502.03805), training-free, board A.

This is a port. CriticalKV bounds the perturbation of the attention output caused by dropping an entry by the
attention it receives times the norm of its projected value, and selects in two stages: a first stage by attention
alone keeps a candidate pool, the second stage ranks the pool by attention x value norm.

Deviations: the interface does not expose the output projection W_o, so the plain value L1 norm replaces
||v W_o||_1; the attention is SnapKV's (question span + last 32 prompt rows, group mean, max-pool 7); the first stage
keeps half of the budget by attention alone and the second stage fills the other half from the rest of a 2x pool;
the observation rows are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class CriticalKVPort(EvictionMethod):
    name = "criticalkv_port"
    query_window = 32
    question_queries = True
    first_stage_share = 0.5
    pool_factor = 2
    kernel = 7

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.group(view.attention(reduce="mean"), "mean")
        attn = F.max_pool1d(attn[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        observed = view.positions >= int(view.query_positions.min())
        attn = attn.masked_fill(observed, float("inf"))
        valid = view.valid_mask()
        vnorm = view.values.float().abs().sum(dim=-1)
        out = []
        for h in range(view.n_kv_heads):
            a = attn[h].masked_fill(~valid[h], float("-inf"))
            n = int(valid[h].sum())
            b = min(view.budget, n)
            first = int(b * self.first_stage_share)
            stage1 = a.topk(first).indices
            pool = a.topk(min(n, self.pool_factor * b)).indices
            rest = pool[~torch.isin(pool, stage1)]
            crit = (a[rest].clamp(max=1e4) * vnorm[h, rest])
            stage2 = rest[crit.topk(min(b - first, rest.numel())).indices]
            out.append(torch.cat([stage1, stage2]).sort().values)
        return Keep(tuple(out))
