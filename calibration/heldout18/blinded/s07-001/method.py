"""Reservoir distillation (board B_offline).

The context streams into a fixed-size reservoir. Whenever a new stretch of context would overflow it, the reservoir is
distilled: every resident entry is scored by how much the rereading rows (the slow offline pass's queries) attend to
it, softmaxed over the reservoir only, plus a freshness bonus for keys unlike the reservoir's average, and the lowest
scorers are dropped. What remains after the last stretch is the cache.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class ReservoirDistill(EvictionMethod):
    name = "reservoir_distill"
    reconstruction_queries = True
    stretches = 6
    fresh_weight = 0.3
    max_rows = 512

    def _rows(self, view: LayerView, head: int) -> torch.Tensor:
        g = view.model.group_size
        q = view.queries[head * g:(head + 1) * g].float()
        if q.shape[1] > self.max_rows:  # evenly thinned rows keep the pass affordable
            pick = torch.linspace(0, q.shape[1] - 1, self.max_rows, device=q.device).long()
            q = q[:, pick]
        return q

    def _distil(self, view: LayerView, head: int, pool: torch.Tensor, rows: torch.Tensor, keep_n: int):
        k = view.keys[head, pool].float()
        probs = torch.softmax(torch.einsum("gnd,sd->gns", rows, k) * view.model.scale, dim=-1)
        use = probs.sum(dim=(0, 1))
        use = use / use.sum().clamp_min(1e-12)
        fresh = 1.0 - F.cosine_similarity(k, k.mean(dim=0, keepdim=True), dim=-1)
        fresh = fresh / fresh.sum().clamp_min(1e-12)
        score = use + self.fresh_weight * fresh
        return pool[score.topk(keep_n).indices.sort().values]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        kept = []
        for h in range(view.n_kv_heads):
            real = valid[h].nonzero().squeeze(-1)
            rows = self._rows(view, h)
            cap = min(view.budget, real.numel())
            reservoir = real[:0]
            for stretch in torch.tensor_split(real, self.stretches):
                reservoir = torch.cat([reservoir, stretch])
                if reservoir.numel() > cap:
                    reservoir = self._distil(view, h, reservoir, rows, cap)
            kept.append(reservoir)
        return Keep(tuple(kept))
