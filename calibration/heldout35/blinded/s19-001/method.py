"""Folded Values: at each cap, the least-read tokens give up their keys but not their values.

During generation every token's average received attention (attention summed over the decode queries since it
appeared, divided by how many of them could see it) is tracked by position. When a layer is full, the tokens with
the lowest average outside a recent window are removed; each removed token's value is folded into the next kept
token after it, weighted by the two tokens' average attention, so what it carried is not lost outright. Keys and
positions of kept tokens are left as they are.
"""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import Rewrite


class FoldedValues(EvictionMethod):
    name = "folded_values"
    query_window = 64
    recent = 16
    sinks = 2

    def _averages(self, view: LayerView) -> torch.Tensor:
        tot, cnt = view.recall("fv_tot"), view.recall("fv_cnt")
        if view.queries is not None and view.query_positions is not None:
            seen = view.state.get("fv_seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                qp = view.query_positions[fresh]
                a = view.attention(view.queries[:, fresh])
                kpos = view.positions.repeat_interleave(view.model.group_size, 0)
                vis = (kpos[:, None, :] <= qp[None, :, None]).float()
                tot = tot + view.group((a * vis).sum(1), "sum")
                cnt = cnt + view.group(vis.sum(1), "sum")
                view.state["fv_seen"] = int(view.query_positions.max())
        view.remember("fv_tot", tot)
        view.remember("fv_cnt", cnt)
        return tot / cnt.clamp_min(1.0)

    def select(self, view: LayerView):
        b = view.budget
        avg = self._averages(view)
        counts = view.valid_mask().sum(dim=1)
        if b >= int(counts.max()):
            return Keep.from_topk(view.positions.float(), b, view.valid)
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            s = avg[h, :n].clone()
            s[max(0, n - self.recent):] = float("inf")
            s[: self.sinks] = float("inf")
            keep = torch.zeros(n, dtype=torch.bool, device=s.device)
            keep[s.topk(min(b, n)).indices] = True
            kept = keep.nonzero().flatten()
            vals = view.values[h, :n].float()
            w = avg[h, :n].clamp_min(1e-6)
            # each dropped token goes to the next kept one (the last kept one if none follows)
            dest = torch.searchsorted(kept, torch.arange(n, device=s.device)).clamp(max=kept.numel() - 1)
            wsum = torch.zeros(kept.numel(), device=s.device).index_add_(0, dest, w)
            vsum = torch.zeros(kept.numel(), vals.shape[1], device=s.device).index_add_(0, dest, vals * w[:, None])
            ks.append(view.keys[h, kept].clone())
            vs.append((vsum / wsum[:, None]).to(view.values.dtype))
            ps.append(view.positions[h, kept].clone())
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
