"""Self-sized pooling (board B_online).

SnapKV's window attention smoothed with a pooling width that each KV head chooses from its own score: the width is
twice the lag at which the score's autocorrelation first falls below one half, plus one (between 1 and 15). Heads
whose attention comes in broad spans keep spans; heads with sharp, isolated peaks keep peaks.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _width(s: torch.Tensor, max_lag: int = 7) -> int:
    x = s - s.mean()
    var = (x * x).mean().clamp_min(1e-12)
    for lag in range(1, max_lag + 1):
        if x.numel() <= lag:
            break
        r = (x[lag:] * x[:-lag]).mean() / var
        if r < 0.5:
            return 2 * (lag - 1) + 1
    return 2 * max_lag + 1


class SelfSizedPooling(EvictionMethod):
    name = "self_sized_pooling"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        raw = view.group(view.attention(reduce="mean"), "mean")
        valid = view.valid_mask()
        score = torch.full_like(raw, float("-inf"))
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(1)
            s = raw[h, idx]
            w = _width(s.log1p())
            score[h, idx] = F.max_pool1d(s.view(1, 1, -1), w, stride=1, padding=w // 2).view(-1) if w > 1 else s
        score = score.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
