import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Decile quotas: each tenth of the context gets a share of the budget by the square root of its attention mass."""

    name = "decile_quotas"
    query_window = 32
    parts = 10

    def select(self, view: LayerView) -> Keep:
        attn = view.group(view.attention(reduce="sum"), "mean")    # (Hkv, T)
        n_kv, n_tok = attn.shape
        edges = torch.linspace(0, n_tok, self.parts + 1).long().tolist()
        keep = []
        for h in range(n_kv):
            mass = torch.stack([attn[h, a:b].sum() for a, b in zip(edges[:-1], edges[1:])]).clamp(min=0).sqrt()
            quota = (mass / mass.sum() * view.budget).floor().long()
            quota[-1] += view.budget - int(quota.sum())
            idx = []
            for (a, b), qn in zip(zip(edges[:-1], edges[1:]), quota.tolist()):
                qn = max(0, min(qn, b - a))
                if qn:
                    idx.append(attn[h, a:b].topk(qn).indices + a)
            got = torch.cat(idx) if idx else torch.zeros(0, dtype=torch.long)
            keep.append(got.sort().values)
        return Keep(tuple(keep))
