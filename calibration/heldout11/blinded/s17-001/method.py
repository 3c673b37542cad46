"""Retained-peak scoring for decode-time eviction (board C).

During a long reasoning trace a token can be idle for a while and then matter again; scoring it only by what the
newest rows read forgets that it ever mattered, while summing over all rows favours old tokens. We keep one number
per cached token, its *retained peak*: at every eviction the newest rows' attention (strongest query head of the
group, averaged over the rows, scaled so the head's best token is 1) is compared with the previous retained peak
discounted by ``carry``, and the larger one is kept. The newest ``recent`` tokens are always kept; the rest of the
cap goes to the highest retained peaks.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RetainedPeak(EvictionMethod):
    name = "retained_peak"
    query_window = 8
    recent = 8
    carry = 0.8

    def _fresh(self, view: LayerView) -> torch.Tensor:
        a = view.attention()  # (H_q, N, T), causal over the newest rows
        h_kv, t = view.n_kv_heads, view.n_tokens
        a = a.view(h_kv, view.model.group_size, a.shape[1], t).amax(dim=1).mean(dim=1)  # (H_kv, T)
        return a / a.amax(dim=1, keepdim=True).clamp_min(1e-12)

    def select(self, view: LayerView) -> Keep:
        b = view.budget
        valid = view.valid_mask()
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        fresh = self._fresh(view)
        old = view.recall("peak", fill=-1.0)
        score = torch.where(old < 0, fresh, torch.maximum(old * self.carry, fresh))
        score = score.masked_fill(~valid, float("-inf"))
        rank_from_end = valid.sum(1, keepdim=True) - 1 - torch.arange(view.n_tokens, device=valid.device)[None]
        # positions ascend per head and padding sits at the end, so the newest real tokens are the last valid ones
        newest = valid & (rank_from_end < min(self.recent, b))
        chosen = Keep.from_topk(score.masked_fill(newest, float("inf")), b, view.valid)
        kept = torch.zeros_like(valid)
        for h, idx in enumerate(chosen.indices):
            kept[h, idx] = True
        view.remember("peak", score.masked_fill(~kept, -1.0).nan_to_num(-1.0, posinf=1.0))
        return chosen
