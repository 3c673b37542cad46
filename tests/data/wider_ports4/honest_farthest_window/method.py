"""Spaced heavy hitters: SnapKV's pooled window attention proposes twice the budget; from the proposals, tokens are
taken one at a time, each the proposal farthest in position from those already taken (even coverage of the
document), with StreamingLLM's opening tokens and the window kept."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class SpacedHitters(EvictionMethod):
    name = "spaced_hitters"
    query_window = 16
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        pull = view.group(view.attention(reduce="sum"), "mean")
        pull = F.avg_pool1d(pull[:, None], 5, 1, 2)[:, 0]
        pull[:, : self.sinks] = float("inf")
        pull[:, -self.query_window:] = float("inf")
        out = []
        for h in range(view.n_kv_heads):
            cand = pull[h].topk(min(view.n_tokens, 2 * view.budget)).indices
            pos = view.positions[h, cand].float()
            fixed = torch.isinf(pull[h, cand])
            taken = fixed.clone()
            gap = (pos[:, None] - pos[taken][None, :]).abs().amin(-1) if taken.any() else torch.full_like(pos, 1e9)
            while int(taken.sum()) < min(view.budget, cand.numel()):
                j = int(gap.masked_fill(taken, -1.0).argmax())
                taken[j] = True
                gap = torch.minimum(gap, (pos - pos[j]).abs())
            out.append(cand[taken].sort().values)
        return Keep(tuple(out))
