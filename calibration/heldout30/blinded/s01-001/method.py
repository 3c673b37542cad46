"""Level Field: the closing rows' attention, read against what distance alone would predict.

On board B the question is not known, so the only readers are the context's own closing rows (SnapKV's
observation window, Li et al. 2024, arXiv 2404.14469, in the query-agnostic form KVzip evaluates). Those rows
spend most of their attention on what is close to them, and a plain sum keeps mostly the tail. Here every
(row, token) weight is divided by the average weight the same query head pays at that distance, distances
bucketed by powers of two and the average taken over the window's own rows: a token scores by how much more
it is read than its distance predicts. The lift is averaged over the rows that can see the token, averaged
over each KV head's query heads and smoothed over 3 neighbours. The first 4 tokens (StreamingLLM's sinks,
Xiao et al. 2023, arXiv 2309.17453) and the window itself are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class LevelField(EvictionMethod):
    name = "level_field"
    query_window = 48
    n_sink = 4
    smooth = 3
    floor = 1e-6

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        attn = view.attention()                                  # (H_q, N, T), causal over the window
        h_q, n_rows, t = attn.shape
        dev = attn.device
        pos = view.positions.repeat_interleave(g, dim=0)         # (H_q, T)
        real = view.valid_mask().repeat_interleave(g, dim=0)
        qpos = view.query_positions.to(dev).view(1, -1, 1)
        gap = qpos - pos[:, None, :]                             # (H_q, N, T)
        seen = (gap >= 0) & real[:, None, :]
        band = torch.floor(torch.log2(gap.clamp_min(0).float() + 1.0)).long()
        n_band = int(band.max()) + 1

        flat_band = band.reshape(h_q, -1)
        flat_seen = seen.reshape(h_q, -1).float()
        flat_w = attn.reshape(h_q, -1) * flat_seen
        total = torch.zeros(h_q, n_band, device=dev).scatter_add_(1, flat_band, flat_w)
        count = torch.zeros(h_q, n_band, device=dev).scatter_add_(1, flat_band, flat_seen)
        expected = (total / count.clamp_min(1.0)).gather(1, flat_band).clamp_min(self.floor)

        lift = (flat_w / expected).view(h_q, n_rows, t).sum(dim=1)
        lift = lift / seen.sum(dim=1).clamp_min(1)
        score = view.group(lift, "mean")
        score = F.avg_pool1d(score[:, None], self.smooth, stride=1, padding=self.smooth // 2,
                             count_include_pad=False)[:, 0]
        pinned = (view.positions < self.n_sink) | (view.positions >= view.query_positions.min())
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
