"""Backbone: half the budget by window attention, half as an evenly spaced backbone over the whole context.

On board B the question is unknown when the cache is compressed, so the context's own last positions are a weak
guess of what will be asked. This method hedges: the last 32 positions are kept, half of the remaining budget
goes to the tokens the window attends to most (SnapKV's score, max-pooled), and the other half is laid as an
evenly spaced backbone over the positions not chosen yet, so every region of the context keeps some tokens.
Builds on SnapKV (window attention) and StreamingLLM (keep the first token, keep the recent window).
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Backbone(EvictionMethod):
    name = "backbone"
    query_window = 32
    kernel = 7
    attention_share = 0.5

    def _attention_scores(self, view: LayerView) -> torch.Tensor:
        attn = view.group(view.attention(reduce="sum"), "mean")
        return F.max_pool1d(attn[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        assert view.query_positions is not None
        valid = view.valid_mask()
        window = (view.positions >= view.query_positions.min()) & valid
        scores = self._attention_scores(view).masked_fill(~valid, float("-inf"))
        out = []
        for h in range(view.n_kv_heads):
            n_real = int(valid[h].sum())
            budget = min(view.budget, n_real)
            keep = torch.zeros(view.n_tokens, dtype=torch.bool, device=view.keys.device)
            keep[window[h]] = True
            keep[0] = valid[h, 0]                          # the first token, as a sink
            if int(keep.sum()) > budget:                   # tiny budget: newest tokens only
                idx = torch.arange(n_real, device=keep.device)[-budget:] if budget > 0 else idx_empty(keep)
                out.append(idx)
                continue
            left = budget - int(keep.sum())
            n_attn = int(round(left * self.attention_share))
            s = scores[h].masked_fill(keep, float("-inf"))
            if n_attn > 0:
                keep[s.topk(n_attn).indices] = True
            left = budget - int(keep.sum())
            if left > 0:
                free = torch.nonzero(~keep[:n_real]).flatten()
                picks = torch.linspace(0, free.numel() - 1, left, device=keep.device).round().long().unique()
                keep[free[picks]] = True
                left = budget - int(keep.sum())
                if left > 0:                               # rounding collisions: top up by attention
                    s = scores[h].masked_fill(keep, float("-inf"))
                    keep[s.topk(left).indices] = True
            out.append(torch.nonzero(keep).flatten())
        return Keep(tuple(out))


def idx_empty(like: torch.Tensor) -> torch.Tensor:
    return torch.zeros(0, dtype=torch.long, device=like.device)
