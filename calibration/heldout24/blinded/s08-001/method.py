"""Run folding (board B_online, query-agnostic prefill).

Neighbouring tokens often carry near-identical keys: a run of them says one thing several times. The context's
own closing rows decide which tokens stay; a token that has to go is not simply dropped but folded into a kept
token of the same run, weighted by how close its key is to the keeper's (a Gaussian of the key distance), so the
run's content survives in fewer slots. Runs are cut wherever two neighbouring keys stop pointing the same way.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class RunFolding(EvictionMethod):
    name = "run_folding"
    query_window = 24
    cut = 0.75                # cosine below which a run ends
    width = 1.0               # Gaussian width, in units of the run's mean key distance
    kernel = 5

    def _keep_order(self, view: LayerView) -> torch.Tensor:
        if view.queries is None:
            return view.positions.float()
        att = view.group(view.attention(reduce="sum"), "mean")
        att = F.avg_pool1d(att[:, None], self.kernel, 1, self.kernel // 2, count_include_pad=False)[:, 0]
        closing = view.positions >= view.query_positions.min()
        return att.masked_fill(closing, float("inf"))

    def _fold_head(self, k: torch.Tensor, v: torch.Tensor, keep: torch.Tensor, rank: torch.Tensor):
        t = k.shape[0]
        unit = F.normalize(k, dim=-1)
        cos = (unit[1:] * unit[:-1]).sum(-1)
        run = torch.cat([torch.zeros(1, dtype=torch.long), (cos < self.cut).long().cumsum(0)])
        kept_idx = keep.nonzero().flatten()
        # the keeper of every token: the best-ranked kept token of its run (none: the token is just dropped)
        best = torch.full((int(run.max()) + 1,), -1, dtype=torch.long)
        for i in kept_idx[rank[kept_idx].argsort(stable=True)].tolist():   # ascending rank: later ones win
            best[run[i]] = i
        keeper = best[run]
        fold = (~keep) & (keeper >= 0)
        src = fold.nonzero().flatten()
        dst = keeper[src]
        dist2 = (k[src] - k[dst]).pow(2).sum(-1)
        scale = dist2.mean().clamp_min(1e-6) * self.width
        w = torch.exp(-dist2 / (2 * scale))
        wsum = torch.ones(t).index_add_(0, dst, w)
        kn = k.clone().index_add_(0, dst, w[:, None] * k[src])
        vn = v.clone().index_add_(0, dst, w[:, None] * v[src])
        kn = kn[kept_idx] / wsum[kept_idx, None]
        vn = vn[kept_idx] / wsum[kept_idx, None]
        return kn, vn, kept_idx

    def select(self, view: LayerView):
        ok = view.valid_mask()
        rank = self._keep_order(view).masked_fill(~ok, float("-inf"))
        keys, values, positions = [], [], []
        for h in range(view.n_kv_heads):
            idx = ok[h].nonzero().flatten()
            k = view.keys[h, idx].float().cpu()
            v = view.values[h, idx].float().cpu()
            r = rank[h, idx].cpu()
            b = min(view.budget, idx.numel())
            keep = torch.zeros(idx.numel(), dtype=torch.bool)
            keep[r.topk(b).indices] = True
            kn, vn, kept = self._fold_head(k, v, keep, r)
            keys.append(kn.to(view.keys.device))
            values.append(vn.to(view.keys.device))
            positions.append(view.positions[h, idx[kept.to(idx.device)]])
        return Rewrite(tuple(keys), tuple(values), tuple(positions))
