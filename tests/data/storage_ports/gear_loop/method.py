"""Low-bit plus thin correction, head by head: integer codes of each key, a rank-r patch for the code's error, and
the newest queries' softmax over the patched keys."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class PatchedCodes(EvictionMethod):
    name = "patched_codes"
    query_window = 8
    r = 2

    def select(self, view: LayerView) -> Keep:
        g = view.model.group_size
        out = []
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
            lo, hi = k.min(dim=0).values, k.max(dim=0).values
            step = (hi - lo).clamp_min(1e-6) / 3
            codes = ((k - lo) / step).to(torch.int8).float()
            approx = codes * step + lo
            resid = k - approx
            u, s, v = torch.svd_lowrank(resid, q=self.r)
            patched = approx + (u * s) @ v.T
            q = view.queries[h * g:(h + 1) * g].float().flatten(0, 1)
            out.append(torch.softmax(q @ patched.T, dim=-1).sum(0))
        return Keep.from_topk(torch.stack(out), view.budget, view.valid)
