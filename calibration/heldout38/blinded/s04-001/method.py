"""Still Needed: consecutive reasoning steps ask for much the same things, so the last few steps are a good
forecast of the next few. A cached token that none of the recent steps asked for noticeably is, for now, not
needed; everything that at least one recent step leaned on stays."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class StillNeeded(EvictionMethod):
    name = "still_needed"
    query_window = 32     # the recent steps that vote
    newest = 32           # the steps' own tokens are kept as they are

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        a = view.attention()                                             # (H_q, N, T)
        qp = view.query_positions
        visible = (view.positions[:, None, :] <= qp[None, :, None]) & valid[:, None, :]   # (H_kv, N, T)
        n_vis = visible.sum(-1).clamp_min(1).float()                     # (H_kv, N)
        g = view.model.group_size
        rel = a.view(view.n_kv_heads, g, *a.shape[1:]) * n_vis[:, None, :, None]   # attention / even share
        need = rel.amax(dim=(1, 2))                                      # strongest ask of any recent step
        newest = view.positions >= int(view.positions.max()) - self.newest + 1
        need = need.masked_fill(newest, float("inf"))
        return Keep.from_topk(need, view.budget, view.valid)
