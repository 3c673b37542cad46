"""Fold-In: keep the top tokens by window attention, fold every evicted token into its most similar
kept token (attention-weighted average of keys and values), and return the rewritten entries."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class FoldIn(EvictionMethod):
    name = "fold_in"
    query_window = 32
    question_queries = True

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        if view.queries is not None:
            w = view.group(view.attention(reduce="sum"), "mean")          # (H_kv, T)
        else:
            w = torch.ones(view.keys.shape[:2], device=view.keys.device)
        w = w.float().clamp_min(1e-6)
        keys_out, vals_out, pos_out = [], [], []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            k, v, p, wh = view.keys[h, idx].float(), view.values[h, idx].float(), view.positions[h, idx], w[h, idx]
            b = min(view.budget, idx.numel())
            kept = wh.topk(b).indices.sort().values if b else idx[:0]
            dropped = torch.ones(idx.numel(), dtype=torch.bool, device=idx.device)
            dropped[kept] = False
            if b and bool(dropped.any()):
                sim = F.normalize(k[dropped], dim=-1) @ F.normalize(k[kept], dim=-1).T   # (n_drop, b)
                host = sim.argmax(dim=1)                                                  # kept slot per dropped token
                mass = wh[kept].clone().index_add_(0, host, wh[dropped])
                ksum = (k[kept] * wh[kept, None]).index_add_(0, host, k[dropped] * wh[dropped, None])
                vsum = (v[kept] * wh[kept, None]).index_add_(0, host, v[dropped] * wh[dropped, None])
                new_k, new_v = ksum / mass[:, None], vsum / mass[:, None]
            else:
                new_k, new_v = k[kept], v[kept]
            keys_out.append(new_k.to(view.keys.dtype))
            vals_out.append(new_v.to(view.values.dtype))
            pos_out.append(p[kept])
        return Rewrite(tuple(keys_out), tuple(vals_out), tuple(pos_out))
