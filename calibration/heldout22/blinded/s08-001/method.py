"""Kinship folding (board C, decode-time cap).

Evicting a token throws away what it carried. Here a departing token is first matched with its closest surviving
relative (the survivor whose key points most nearly the same way); if the kinship clears the layer's running bar,
the departing token is folded into that relative, keys and values alike, with a weight that grows with their
kinship. The bar is a running average of the best kinship seen at each round, so it adapts to how redundant the
trace has been. Which tokens depart is decided by attention tallied over every decode row since the start (carried
across rounds); the newest rows are never evicted.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView, Rewrite


class KinshipFolding(EvictionMethod):
    name = "kinship_folding"
    query_window = 64
    newest = 16
    bar_memory = 0.7

    def _tally(self, view: LayerView) -> torch.Tensor:
        acc = view.recall("tally")
        if view.queries is not None:
            seen = view.state.get("seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                acc = acc + view.group(view.attention(view.queries[:, fresh], reduce="sum"), "sum")
                view.state["seen"] = int(view.query_positions.max())
        view.remember("tally", acc)
        return acc

    def select(self, view: LayerView):
        tally = self._tally(view)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        ok = view.valid_mask()
        keys, vals, poss = [], [], []
        for h in range(view.n_kv_heads):
            n = int(ok[h].sum())
            s = tally[h, :n].clone()
            s[max(0, n - self.newest):] = float("inf")
            keep = s.topk(min(view.budget, n)).indices.sort().values
            gone = torch.ones(n, dtype=torch.bool, device=s.device)
            gone[keep] = False
            k = view.keys[h, :n].float().clone()
            v = view.values[h, :n].float().clone()
            if bool(gone.any()):
                unit = torch.nn.functional.normalize(k, dim=-1)
                kin = unit[gone] @ unit[keep].T                                   # (departing, survivors)
                best, rel = kin.max(dim=1)
                bar_key = f"bar{h}"
                prev = view.state.get(bar_key)
                bar = float(best.mean()) if prev is None else \
                    self.bar_memory * prev + (1 - self.bar_memory) * float(best.mean())
                view.state[bar_key] = bar
                fold = best >= bar
                if bool(fold.any()):
                    w = torch.zeros_like(kin)
                    w[fold.nonzero().flatten(), rel[fold]] = best[fold].exp()
                    mass = w.sum(0)                                                # (survivors,)
                    own = torch.full_like(mass, math.e)
                    k_keep, v_keep = k[keep], v[keep]
                    k_new = (own[:, None] * k_keep + w.T @ k[gone]) / (own + mass)[:, None]
                    v_new = (own[:, None] * v_keep + w.T @ v[gone]) / (own + mass)[:, None]
                    k[keep], v[keep] = k_new, v_new
            keys.append(k[keep].to(view.keys.dtype))
            vals.append(v[keep].to(view.values.dtype))
            poss.append(view.positions[h, keep])
        return Rewrite(tuple(keys), tuple(vals), tuple(poss))
