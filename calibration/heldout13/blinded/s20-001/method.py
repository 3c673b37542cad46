"""Crowding-guided coalescence (board C).

When a layer of the reasoning cache is full we coalesce entries instead of evicting them, and we choose which
ones by how *crowded* their neighbourhood in key space is. Crowding of entry i:

    c_i = mean_j phi(cos(k_i, k_j)),   phi(s) = s if s >= m else exp(s - m) - 1

so close neighbours count fully and distant ones contribute a small negative amount; m shrinks with depth
(m = 0.9 (1 - layer / n_layers)), as deeper layers' keys are more alike. Only the 2r most crowded entries are
candidates for the r coalescences the block requires; isolated entries (a lone fact, a number) are never touched.
The candidates, in crowding order, alternate between givers and takers; every giver coalesces into the taker
whose key is closest, keys and values averaged with the weights of how many entries each already stands for
(carried across calls). The four opening entries and the newest 16 are exempt.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite


def _cos(x: torch.Tensor) -> torch.Tensor:
    u = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-6)
    return u @ u.T


class CrowdingCoalesce(EvictionMethod):
    name = "crowding_coalesce"
    opening = 4
    newest = 16

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        weight = view.recall("stands_for", fill=1.0)
        depth = view.layer / max(1, view.model.n_layers)
        m = 0.9 * (1.0 - depth)
        ks, vs, ps, ws = [], [], [], []
        for h in range(view.n_kv_heads):
            sel = valid[h]
            k, v, p, w = view.keys[h][sel].float(), view.values[h][sel].float(), view.positions[h][sel], weight[h][sel]
            n = k.shape[0]
            r = n - view.budget
            if r > 0:
                s = _cos(k)
                crowd = torch.where(s >= m, s, torch.exp(s - m) - 1.0).mean(dim=1)
                exempt = torch.zeros(n, dtype=torch.bool, device=k.device)
                exempt[: min(self.opening, n)] = True
                exempt[max(0, n - self.newest):] = True
                crowd = crowd.masked_fill(exempt, float("-inf"))
                n_cand = min(2 * r, int((~exempt).sum()))
                cand = crowd.topk(n_cand).indices
                givers, takers = cand[0::2], cand[1::2]
                if takers.numel() and givers.numel():
                    givers = givers[: min(r, givers.numel())]
                    to = takers[s[givers][:, takers].argmax(dim=1)]
                    wk, wv = k * w[:, None], v * w[:, None]
                    wk.index_add_(0, to, wk[givers])
                    wv.index_add_(0, to, wv[givers])
                    w = w.index_add(0, to, w[givers])
                    stay = torch.ones(n, dtype=torch.bool, device=k.device)
                    stay[givers] = False
                    k, v, p, w = wk[stay] / w[stay][:, None], wv[stay] / w[stay][:, None], p[stay], w[stay]
                if k.shape[0] > view.budget:  # not enough candidates: drop the oldest non-exempt
                    extra = k.shape[0] - view.budget
                    keep = torch.ones(k.shape[0], dtype=torch.bool, device=k.device)
                    lo = min(self.opening, k.shape[0])
                    keep[lo:lo + extra] = False
                    k, v, p, w = k[keep], v[keep], p[keep], w[keep]
            ks.append(k), vs.append(v), ps.append(p.long()), ws.append(w)
        # carry the weights to the next call, aligned by position
        width = max(x.numel() for x in ps)
        pos_pad = torch.full((len(ps), width), -1, dtype=torch.long, device=view.keys.device)
        w_pad = torch.zeros(len(ps), width, device=view.keys.device)
        for h, (p, w) in enumerate(zip(ps, ws)):
            pos_pad[h, : p.numel()], w_pad[h, : w.numel()] = p, w
        view.state["stands_for"] = (pos_pad, w_pad, pos_pad >= 0)
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
