"""Port of BaKlaVa (Gulhan et al., 2025, "BaKlaVa -- Budgeted Allocation of KV cache for Long-context
Inference", arXiv 2502.13176) to the harness, board A.

This is a port, not a new method. BaKlaVa estimates how important each KV head is and gives important heads a
larger share of the layer's KV memory, leaving the token choice inside each head to an ordinary eviction policy.
What is ported: per-head importance -> per-head budgets (proportional, with a floor), then per-head top-k by
question/window attention (SnapKV-style scoring, max-pool 7, window kept).

Deviations (stated): BaKlaVa profiles head importance once, offline, on calibration prompts; the harness gives no
calibration pass, so importance is estimated per prompt from the layer itself. The importance heuristic follows our
reading of the paper (a head matters when its attention output departs from the plain average of its values:
1 - cos(output, mean value), averaged over the window rows and the group's query heads); the paper's exact profiling
statistic and its layer-level allocation are not reproduced (the harness's layer budget is used as is).
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class BaKlaVaPort(EvictionMethod):
    name = "baklava_port"
    query_window = 32
    question_queries = True
    floor_share = 0.5     # every head keeps at least half the mean budget
    kernel = 7

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        ok = view.valid_mask()
        attn = view.attention()                                         # (H_q, N, T)
        g = view.model.group_size
        v = view.values.float()
        out = torch.einsum("hnt,htd->hnd", attn.view(view.n_kv_heads, -1, attn.shape[-1]), v)
        mean_v = (v * ok[..., None]).sum(1) / ok.sum(1, keepdim=True).clamp_min(1)
        imp = 1 - F.cosine_similarity(out, mean_v[:, None, :], dim=-1).mean(1)     # (H_kv,)
        h = view.n_kv_heads
        total = view.budget * h
        floor = int(self.floor_share * view.budget)
        spare = total - floor * h
        share = imp.clamp_min(1e-6) / imp.clamp_min(1e-6).sum()
        per_head = (floor + torch.floor(share * spare)).long()
        per_head = torch.minimum(per_head, ok.sum(1))
        scores = view.group(attn.sum(1), "mean")
        scores = F.max_pool1d(scores[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(scores, per_head, view.valid)
