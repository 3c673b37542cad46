"""Focus-sized memory: a layer whose closing queries look everywhere (high entropy) keeps more tokens, a focused
layer fewer; the ones it keeps are chosen by that attention and each dropped token is averaged into a kept one."""

import math

import torch

from harness.api import EvictionMethod, LayerView, Rewrite


class FocusSized(EvictionMethod):
    name = "focus_sized"
    query_window = 24

    def select(self, view: LayerView) -> Rewrite:
        h, n = view.n_kv_heads, view.n_tokens
        att = view.attention().mean(dim=1)
        att = view.group(att, "mean")
        spread = -(att * torch.log(att.clamp_min(1e-9))).sum(dim=-1) / math.log(n)
        ks, vs, ps = [], [], []
        for i in range(h):
            room = max(8, int(view.budget * float(spread[i].clamp(0.25, 1.0))))
            keep = att[i].topk(min(room, n)).indices.sort().values
            k, v = view.keys[i].float().clone(), view.values[i].float().clone()
            out = torch.ones(n, dtype=torch.bool)
            out[keep] = False
            home = torch.searchsorted(keep, torch.nonzero(out).flatten()).clamp(max=keep.numel() - 1)
            k_keep, v_keep = k[keep], v[keep]
            k_keep.index_add_(0, home, k[out])
            v_keep.index_add_(0, home, v[out])
            size = torch.ones(keep.numel()).index_add_(0, home, torch.ones(home.numel()))
            ks.append((k_keep / size[:, None]).to(view.keys.dtype))
            vs.append((v_keep / size[:, None]).to(view.values.dtype))
            ps.append(view.positions[i, keep])
        return Rewrite(keys=tuple(ks), values=tuple(vs), positions=tuple(ps))
