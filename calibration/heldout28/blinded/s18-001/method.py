"""Braided Runs: neighbouring entries that say the same thing are braided into one, and the strongest braids stay.

Along each KV head's cache, a run of consecutive keys whose direction barely changes (cosine between neighbours
above a threshold) is treated as one statement. Each run is braided into a single entry around its anchor, the
member the harness's re-reading pass attends to most: the other members join with weights that fall off with
their key distance to the anchor (a Gaussian whose width is the run's own mean squared distance), keys and values
alike, at the anchor's position. The braids are then ranked by the re-reading attention their members collected
together and the strongest are kept. The opening entries are never braided.
"""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView, Rewrite


class BraidedRuns(EvictionMethod):
    name = "braided_runs"
    reconstruction_queries = True
    threshold = 0.8
    n_open = 4

    def _braid(self, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor, imp: torch.Tensor, budget: int):
        t = k.shape[0]
        unit = F.normalize(k, dim=-1)
        breaks = torch.ones(t, dtype=torch.bool, device=k.device)
        breaks[1:] = (unit[1:] * unit[:-1]).sum(dim=-1) < self.threshold
        breaks[: self.n_open + 1] = True
        run = breaks.long().cumsum(0) - 1
        n_runs = int(run[-1]) + 1
        best = torch.full((n_runs,), float("-inf"), device=k.device).scatter_reduce(0, run, imp, "amax")
        idx = torch.arange(t, device=k.device)
        anchor = torch.full((n_runs,), t, device=k.device).scatter_reduce(
            0, run, torch.where(imp >= best[run], idx, torch.full_like(idx, t)), "amin")
        d2 = (k - k[anchor[run]]).pow(2).sum(dim=-1)
        width = torch.zeros(n_runs, device=k.device).index_add_(0, run, d2)
        width = width / torch.bincount(run, minlength=n_runs).float()
        w = torch.exp(-d2 / (2.0 * width[run]).clamp_min(1e-6))
        wsum = torch.zeros(n_runs, device=k.device).index_add_(0, run, w)[:, None]
        bk = torch.zeros(n_runs, k.shape[1], device=k.device).index_add_(0, run, w[:, None] * k) / wsum
        bv = torch.zeros(n_runs, v.shape[1], device=k.device).index_add_(0, run, w[:, None] * v) / wsum
        strength = torch.zeros(n_runs, device=k.device).index_add_(0, run, imp)
        top = strength.topk(min(budget, n_runs)).indices.sort().values
        return bk[top], bv[top], pos[anchor[top]]

    def select(self, view: LayerView):
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        imp = view.group(view.attention(view.queries, reduce="sum"), "sum")
        valid = view.valid_mask()
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            real = torch.nonzero(valid[h]).flatten()
            bk, bv, bp = self._braid(view.keys[h, real].float(), view.values[h, real].float(),
                                     view.positions[h, real], imp[h, real], view.budget)
            ks.append(bk.to(view.keys.dtype))
            vs.append(bv.to(view.values.dtype))
            ps.append(bp.long())
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
