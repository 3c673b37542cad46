"""Even Keel: decode-time eviction that keeps accumulated attention honest about how many keys a query saw.

A query that sees n keys spreads its softmax thinner the larger n is, so summed attention rewards whatever was
attended while the cache was short. Each decoding query's logits are therefore sharpened or softened by
log(n_visible) / log(budget + 1) (clamped to [0.5, 2]) before its softmax, so that a query over a long cache
and one over a short cache express comparable confidence. The per-token tally is the mean of those rescaled
weights over the queries that could see the token, times the token's value norm (what it can add to the
read-out). The newest eighth of the budget is kept outright.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class EvenKeel(EvictionMethod):
    name = "even_keel"
    query_window = 512
    fresh_share = 0.125

    def _rescaled(self, view: LayerView, q: torch.Tensor, qpos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hkv, t, d = view.keys.shape
        g = view.model.group_size
        valid = view.valid_mask()
        k = view.keys.float()
        mass = torch.zeros(hkv, t, device=k.device)
        hits = torch.zeros(hkv, t, device=k.device)
        ref = math.log(view.budget + 1.0)
        for s in range(0, q.shape[1], 64):
            qc = q[:, s:s + 64].float().reshape(hkv, g, -1, d)
            pc = qpos[s:s + 64]
            see = (view.positions[:, None, :] <= pc[None, :, None]) & valid[:, None, :]   # (hkv, c, T)
            n_vis = see.sum(-1).clamp_min(2).float()                                     # (hkv, c)
            temper = (n_vis.log() / ref).clamp(0.5, 2.0)
            lg = torch.einsum("hgcd,htd->hgct", qc, k) * view.model.scale * temper[:, None, :, None]
            lg = lg.masked_fill(~see[:, None], float("-inf"))
            w = lg.softmax(-1).nan_to_num(0.0)
            mass += w.sum(dim=(1, 2)) / g
            hits += see.sum(dim=1).float()
        return mass, hits

    def select(self, view: LayerView) -> Keep:
        mass = view.recall("keel_mass")
        hits = view.recall("keel_hits")
        if view.queries is not None and view.query_positions is not None:
            done = view.state.get("keel_last", -1)
            fresh = view.query_positions > done
            if bool(fresh.any()):
                qpos = view.query_positions[fresh].to(view.positions.device)
                dm, dh = self._rescaled(view, view.queries[:, fresh], qpos)
                mass, hits = mass + dm, hits + dh
                view.state["keel_last"] = int(qpos.max())
        view.remember("keel_mass", mass)
        view.remember("keel_hits", hits)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = mass / hits.clamp_min(1.0) * view.values.float().norm(dim=-1)
        newest = max(1, int(view.budget * self.fresh_share))
        counts = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, max(0, n - newest):n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
