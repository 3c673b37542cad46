"""Coarse-channel question scoring (board A).

Fine key detail is mostly noise for deciding *which* tokens a question needs, so we score tokens against a deliberately
coarse copy of the keys. Keys are cut into groups of 32 consecutive tokens; inside a group each channel is snapped to 4
evenly spaced levels between that channel's minimum and maximum in the group (channel-wise, so a channel with large
outliers does not flatten the others). The closing 32 tokens, still being written, are used at full resolution. The
question (plus the last 16 prompt queries) attends causally over this copy; attention is summed over the queries and
averaged over the KV head's query heads. The question span and the first four tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def coarsen(keys: torch.Tensor, group: int, levels: int, fresh: int) -> torch.Tensor:
    """(H, T, D) -> keys snapped per (group of tokens, channel) to ``levels`` uniform levels; the last ``fresh`` exact."""
    h, t, d = keys.shape
    k = keys.float()
    body = max(0, t - fresh)
    body -= body % group
    out = k.clone()
    if body:
        blk = k[:, :body].reshape(h, body // group, group, d)
        lo = blk.amin(dim=2, keepdim=True)
        hi = blk.amax(dim=2, keepdim=True)
        step = (hi - lo).clamp_min(1e-6) / (levels - 1)
        snapped = torch.round((blk - lo) / step).clamp(0, levels - 1) * step + lo
        out[:, :body] = snapped.reshape(h, body, d)
    return out


class CoarseChannelScoring(EvictionMethod):
    name = "coarse_channel_scoring"
    query_window = 16
    question_queries = True
    group = 32
    levels = 4
    fresh = 32
    n_keep_first = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rough = coarsen(view.keys, self.group, self.levels, self.fresh)
        h_kv, t, d = rough.shape
        g = view.model.group_size
        q = view.queries.float().reshape(h_kv, g, -1, d)
        logits = torch.einsum("hgnd,htd->hgnt", q, rough) * view.model.scale
        mask = view.positions[:, None, None, :] > view.query_positions.to(rough.device)[None, None, :, None]
        if view.valid is not None:
            mask = mask | ~view.valid[:, None, None, :]
        p = logits.masked_fill(mask, float("-inf")).softmax(-1).nan_to_num(0.0)
        score = p.sum(2).mean(1)
        hold = (view.positions < self.n_keep_first) | (view.positions >= int(view.query_positions.min()))
        return Keep.from_topk(score.masked_fill(hold, float("inf")), view.budget, view.valid)
