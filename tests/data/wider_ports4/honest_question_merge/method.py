"""Asked-for and folded: the question's attention picks the entries (FINCH's scoring); each entry that is let go is
averaged into the kept entry just before it in the text (its nearest kept predecessor, D2O-style folding by
position), weighted by its own attention, so nothing the question touched is dropped outright."""

import torch

from harness.api import EvictionMethod, LayerView, Rewrite


class AskedFolded(EvictionMethod):
    name = "asked_folded"
    question_queries = True

    def select(self, view: LayerView) -> Rewrite:
        pull = view.group(view.attention(reduce="sum"), "mean")
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            keep = pull[h].topk(view.budget).indices.sort().values
            drop = torch.ones(view.n_tokens, dtype=torch.bool)
            drop[keep] = False
            k, v = view.keys[h, keep].float(), view.values[h, keep].float()
            if drop.any():
                where = drop.nonzero().flatten()
                home = (torch.searchsorted(keep, where) - 1).clamp_min(0)  # the kept entry before it
                w = pull[h, where][:, None]
                base = pull[h, keep][:, None]
                k = (k * base).index_add(0, home, w * view.keys[h, where].float())
                v = (v * base).index_add(0, home, w * view.values[h, where].float())
                tot = base.index_add(0, home, w).clamp_min(1e-9)
                k, v = k / tot, v / tot
            ks.append(k.to(view.keys.dtype))
            vs.append(v.to(view.values.dtype))
            ps.append(view.positions[h, keep])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
