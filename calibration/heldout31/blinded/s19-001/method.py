"""Square-Root Bands: every stretch of the context gets a say, in proportion to the square root of its pull.

The closing 32 rows' summed attention (group mean) scores the tokens as in SnapKV. Instead of one top-k over the
whole context, the context before the window is cut into 8 equal bands by position; each band's quota of the budget
is proportional to the square root of its total score (largest-remainder rounding, capped at the band's size), and
each band keeps its own top tokens. A concave share still favours the bands the window reads, but leaves the other
bands a few tokens for the questions that come later. The window and the first 4 tokens are kept.
Builds on SnapKV (Li et al., 2024), StreamingLLM's sinks and ChunkKV's point that isolated top-k loses coverage;
the square-root band quota is the new part.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SqrtBands(EvictionMethod):
    name = "sqrt_bands"
    query_window = 32
    bands = 8
    sinks = 4

    def _quota(self, pull: torch.Tensor, sizes: torch.Tensor, room: int) -> torch.Tensor:
        want = pull.clamp_min(0).sqrt()
        want = want / want.sum().clamp_min(1e-12) * room
        quota = torch.minimum(want.floor(), sizes).long()
        left = room - int(quota.sum())
        while left > 0:
            spare = sizes - quota
            if int(spare.sum()) == 0:
                break
            frac = (want - quota).masked_fill(spare <= 0, float("-inf"))
            quota[int(frac.argmax())] += 1
            left -= 1
        return quota

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        scores = view.group(view.attention(reduce="sum"), "mean")
        valid = view.valid_mask()
        wstart = view.query_positions.min()
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(1)
            pos = view.positions[h, idx]
            fixed = (pos >= wstart) | (pos < self.sinks)
            free = idx[~fixed]
            room = max(0, view.budget - int(fixed.sum()))
            picked = [idx[fixed][idx[fixed].numel() - min(view.budget, int(fixed.sum())):]]
            if room > 0 and free.numel() > 0:
                band = torch.bucketize(torch.arange(free.numel(), device=free.device),
                                       torch.linspace(0, free.numel(), self.bands + 1, device=free.device)[1:-1],
                                       right=True)
                s = scores[h, free]
                pull = torch.zeros(self.bands, device=s.device).scatter_add(0, band, s)
                sizes = torch.zeros(self.bands, device=s.device).scatter_add(0, band, torch.ones_like(s))
                quota = self._quota(pull, sizes, min(room, free.numel()))
                for b in range(self.bands):
                    members = (band == b).nonzero().squeeze(1)
                    k = int(quota[b])
                    if k > 0:
                        picked.append(free[members[s[members].topk(k).indices]])
            out.append(torch.cat(picked).sort().values)
        return Keep(tuple(out))
