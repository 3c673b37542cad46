"""Seam Folding: neighbouring tokens often carry almost the same key, as if the context were printed on paper
with many near-identical lines. We fold the page along its flattest seams: runs of neighbours whose keys agree
become one entry, centred on the run's most questioned token, with its neighbours blended in by how close they
sit to it. Nothing is thrown away outright; the page just gets shorter."""

import torch

from harness.api import EvictionMethod, LayerView, Rewrite


class SeamFolding(EvictionMethod):
    name = "seam_folding"
    question_queries = True

    def _fold(self, k, v, pos, heat, budget):
        """One head: k, v (T, D), pos (T,), heat (T,) -> folded (k, v, pos) with at most ``budget`` entries."""
        t = k.shape[0]
        if budget >= t:
            return k, v, pos
        unit = torch.nn.functional.normalize(k.float(), dim=-1)
        flat = (unit[1:] * unit[:-1]).sum(-1)                     # agreement across each seam (T-1,)
        n_folds = t - max(1, budget)
        seams = torch.ones(t - 1, dtype=torch.bool, device=k.device)   # True: the seam stays open (a boundary)
        seams[flat.topk(n_folds).indices] = False
        run = torch.cat([torch.zeros(1, dtype=torch.long, device=k.device), seams.long().cumsum(0)])   # (T,)
        n_runs = int(run[-1]) + 1
        # each run's centre: its most questioned token
        best = torch.full((n_runs,), -float("inf"), device=k.device).scatter_reduce(0, run, heat, "amax")
        is_top = heat >= best[run]
        first_top = torch.full((n_runs,), t, dtype=torch.long, device=k.device).scatter_reduce(
            0, run, torch.where(is_top, torch.arange(t, device=k.device), torch.full_like(run, t)), "amin")
        centre = first_top[run]                                   # (T,) index of each token's run centre
        d2 = (k.float() - k.float()[centre]).pow(2).sum(-1)       # squared distance to the centre's key
        spread = torch.zeros(n_runs, device=k.device).index_add_(0, run, d2)
        count = torch.zeros(n_runs, device=k.device).index_add_(0, run, torch.ones_like(d2))
        sigma2 = (spread / count.clamp_min(1)).clamp_min(1e-6)[run]
        w = torch.exp(-d2 / (2 * sigma2))                         # the centre itself weighs 1
        wsum = torch.zeros(n_runs, device=k.device).index_add_(0, run, w)
        fk = torch.zeros(n_runs, k.shape[1], device=k.device).index_add_(0, run, w[:, None] * k.float())
        fv = torch.zeros(n_runs, v.shape[1], device=k.device).index_add_(0, run, w[:, None] * v.float())
        fk, fv = fk / wsum[:, None], fv / wsum[:, None]
        return fk.to(k.dtype), fv.to(v.dtype), pos[first_top]

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        if view.queries is not None:
            heat = view.group(view.attention(reduce="sum"), "mean")
        else:
            heat = view.keys.float().norm(dim=-1).neg()
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            m = valid[h]
            k, v, p = self._fold(view.keys[h][m], view.values[h][m], view.positions[h][m], heat[h][m].float(),
                                 view.budget)
            ks.append(k)
            vs.append(v)
            ps.append(p)
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
