"""Spaced Peaks: spend most of the budget on distinct peaks of the window attention, not on their slopes.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) in its query-agnostic form: the closing 32 rows of the
context score every token by the attention they pay it (summed over the rows, averaged over the KV head's query
heads). SnapKV then max-pools and takes the top tokens, so one strong spot and its neighbours can take many slots
while a second, weaker spot gets none. Here the first 60 % of the free budget goes to peaks only: tokens that are
the maximum of their own neighbourhood (3 tokens either side), strongest first, in the spirit of non-maximum
suppression in detection. The rest of the budget is filled from everything else by the max-pooled score (kernel
5), so the neighbours of the best peaks still come in. The first 4 tokens (StreamingLLM, arXiv 2309.17453) and
the closing rows are kept.
"""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class SpacedPeaks(EvictionMethod):
    name = "spaced_peaks"
    query_window = 32
    radius = 3
    peak_share = 0.6
    kernel = 5
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        s = view.group(view.attention(reduce="sum"), "mean").masked_fill(~valid, float("-inf"))
        width = 2 * self.radius + 1
        crest = F.max_pool1d(s[:, None], width, stride=1, padding=self.radius)[:, 0]
        smooth = F.max_pool1d(s[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        fixed = (view.positions < self.n_sink) | (view.positions >= view.query_positions.min())
        peak = (s == crest) & valid & ~fixed & torch.isfinite(s)
        out = []
        for h in range(view.n_kv_heads):
            size = min(view.budget, int(valid[h].sum()))
            chosen = torch.zeros_like(valid[h])
            pinned = torch.nonzero(fixed[h] & valid[h]).flatten()
            chosen[pinned[-size:] if pinned.numel() > size else pinned] = True
            free = size - int(chosen.sum())
            n_peak = min(int(self.peak_share * free), int(peak[h].sum()))
            if n_peak > 0:
                chosen[s[h].masked_fill(~peak[h], float("-inf")).topk(n_peak).indices] = True
            room = size - int(chosen.sum())
            if room > 0:
                rest = smooth[h].masked_fill(chosen | ~valid[h], float("-inf"))
                chosen[rest.topk(room).indices] = True
            out.append(torch.nonzero(chosen).flatten())
        return Keep(tuple(out))
