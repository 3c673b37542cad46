"""Entropy-gated mix of window attention and key norm (board B_online).

Per KV head, a window-attention ranking (the context's last 32 queries, SnapKV-style) and a key-norm ranking
(K-norm) are mixed; the weight on key norm is the normalised entropy of that head's window attention, so a
head whose window attends diffusely (little to learn from it) leans on the query-free key norm instead.
"""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class EntropyGatedMix(EvictionMethod):
    name = "entropy_gated_mix"
    query_window = 32
    sinks = 4
    recent = 8

    @staticmethod
    def _quantile01(x, valid):
        x = x.masked_fill(~valid, float("-inf"))
        r = x.argsort(dim=-1).argsort(dim=-1).float()
        lo = (~valid).sum(dim=-1, keepdim=True).float()
        span = (valid.sum(dim=-1, keepdim=True).float() - 1).clamp_min(1)
        return ((r - lo) / span).clamp_min(0)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        g = view.model.group_size
        attn = view.attention()  # (H_q, W, T)
        p = attn.mean(dim=1)  # (H_q, T), a distribution per query head
        ent = -(p.clamp_min(1e-12).log() * p).sum(dim=-1)
        n_valid = valid.sum(dim=-1).repeat_interleave(g).float()
        gate = view.group((ent / n_valid.clamp_min(2).log()).clamp(0, 1), "mean")  # (H_kv,)
        win = view.group(attn.sum(dim=1), "mean")
        win = F.avg_pool1d(win[:, None], 5, stride=1, padding=2, count_include_pad=False)[:, 0]
        a = self._quantile01(win, valid)
        k = self._quantile01(-view.keys.float().norm(dim=-1), valid)
        score = (1 - gate)[:, None] * a + gate[:, None] * k
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, : min(self.sinks, c)] = math.inf
            score[h, max(0, c - self.recent): c] = math.inf
        return Keep.from_topk(score, view.budget, view.valid)
