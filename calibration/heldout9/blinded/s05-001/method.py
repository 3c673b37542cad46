"""LU-KV head-wise budgets around Expected Attention (board B_online): a port, not a new method.

Source: Tang et al., "Predicting Future Utility: Global Combinatorial Optimization for Task-Agnostic KV Cache
Eviction" (LU-KV, arXiv 2602.08585), in the configuration kvpress ships as LUKVPress: Expected Attention scores
(epsilon 2e-2) rank tokens inside each KV head, the first 4 tokens and the last one are protected, and each KV head
of a layer keeps its own number of tokens.

What differs from the original, and why:
- LU-KV reads per-(layer, head) keep ratios from a budget curve optimised offline for one model and one scorer. No
  curve exists for the embedded SmolLM2, and the arena gives no calibration run, so the curve is replaced by the
  greedy marginal-utility split it approximates, computed on the prompt itself: every head's scores are normalised
  to a distribution, and the layer's slots go one by one to the (head, token) pair with the largest remaining
  utility (a flattened top-k). This uses the prompt at hand where LU-KV uses an average over calibration contexts.
- The harness fixes each layer's budget before any layer is seen, so only the split across the heads of a layer is
  adaptive; LU-KV's curve also moves budget between layers.
- Scoring is the harness's own Expected Attention port (statistics from the context's queries, n_future 512).
"""

import torch

from harness import Keep, LayerView
from harness.methods.expected_attention import ExpectedAttention


class LUKVHeadwise(ExpectedAttention):
    name = "lukv_headwise"
    epsilon = 2e-2
    sink = 4
    window = 1

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        try:
            view.rope
        except ValueError:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h, t = view.n_kv_heads, view.n_tokens
        valid = view.valid_mask()
        raw = self.scores(view).masked_fill(~valid, 0.0)                   # sinks come back as +inf
        counts = valid.sum(dim=1)
        protect = (view.positions < self.sink) & valid
        for i in range(h):
            n = int(counts[i])
            protect[i, max(0, n - self.window):n] = True
        finite = raw.masked_fill(protect | ~valid, 0.0)
        utility = finite / finite.sum(dim=1, keepdim=True).clamp_min(1e-12)
        total = min(view.budget * h, int(valid.sum()))
        forced = [torch.nonzero(protect[i]).flatten()[: view.budget] for i in range(h)]
        left = total - sum(int(f.numel()) for f in forced)
        pool = utility.masked_fill(protect | ~valid, float("-inf")).flatten()
        take = pool.topk(max(0, min(left, int(torch.isfinite(pool).sum())))).indices
        out = []
        for i in range(h):
            extra = take[take // t == i] % t
            out.append(torch.cat([forced[i], extra]).unique().sort().values)
        return Keep(tuple(out))
