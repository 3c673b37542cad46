"""Volume keeper (board B_offline, reconstruction pass).

The cache should hold as much distinct, needed information as possible in few slots. Each token is a point
(its unit key beside its unit value) weighted by how much the model leaned on it while repeating the context
(the reconstruction pass's peak attention). Tokens are picked one at a time so that the weighted points span
the largest volume: each pick is the token that adds the most volume to what is already held, which discounts
near-copies of held tokens automatically. Once the volume stops growing the rest is filled by weight alone.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class VolumeKeeper(EvictionMethod):
    name = "volume_keeper"
    reconstruction_queries = True
    ridge = 0.05              # keeps the volume growing after the feature space is spanned
    greedy_cap = 192          # picks made by volume; the rest by weight
    sinks = 2

    def _weights(self, view: LayerView) -> torch.Tensor:
        if view.queries is None:
            return torch.ones(view.keys.shape[:2], device=view.keys.device)
        peak = view.group(view.attention(reduce="max"), "max")             # (H_kv, T)
        return peak.clamp_min(1e-8).sqrt()

    def _pick(self, feat: torch.Tensor, w: torch.Tensor, k: int) -> list[int]:
        """Greedy volume (log-determinant) picks with an incremental Cholesky factor."""
        n = feat.shape[0]
        gram_diag = w.pow(2) * (feat.pow(2).sum(-1) + self.ridge)
        resid = gram_diag.clone()
        factor = torch.zeros(k, n, dtype=torch.float64)
        chosen: list[int] = []
        alive = torch.ones(n, dtype=torch.bool)
        for step in range(k):
            gain = torch.log1p(resid.clamp_min(0)).masked_fill(~alive, -math.inf)
            j = int(gain.argmax())
            if gain[j] <= 1e-10:
                break
            chosen.append(j)
            alive[j] = False
            row = w[j] * w * (feat @ feat[j])
            row[j] += self.ridge * w[j] ** 2
            e = (row - factor[:step].T @ factor[:step, j]) / resid[j].clamp_min(1e-12).sqrt()
            factor[step] = e
            resid = resid - e.pow(2)
        return chosen

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        ok = view.valid_mask()
        weight = self._weights(view)
        out = []
        for h in range(view.n_kv_heads):
            idx = ok[h].nonzero().flatten()
            b = min(view.budget, idx.numel())
            feat = torch.cat([F.normalize(view.keys[h, idx].double(), dim=-1),
                              F.normalize(view.values[h, idx].double(), dim=-1)], dim=-1).cpu() / math.sqrt(2)
            w = weight[h, idx].double().cpu()
            lead = [i for i in range(min(self.sinks, b))]
            picks = set(lead)
            for j in self._pick(feat, w, min(b, self.greedy_cap)):
                if len(picks) >= b:
                    break
                picks.add(j)
            if len(picks) < b:
                rest = w.clone()
                rest[list(picks)] = -1
                picks.update(rest.topk(b - len(picks)).indices.tolist())
            sel = torch.tensor(sorted(picks), dtype=torch.long)
            out.append(idx[sel.to(idx.device)])
        return Keep(tuple(out))
