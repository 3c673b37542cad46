"""Steady-and-restless scoring (board B_online): a context entry is worth keeping when the closing rows look at
it a lot on average, and also when they disagree about it (some rows want it badly, others not)."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SteadyRestless(EvictionMethod):
    name = "steady_restless"
    query_window = 48
    unrest_gain = 150.0    # weight of the spread term
    smooth = 5

    def _indicator(self, view: LayerView) -> torch.Tensor:
        rows = view.attention()                                   # (H_q, W, T)
        centre = rows.mean(dim=1)
        spread = ((rows - centre[:, None, :]) ** 2).mean(dim=1)   # population variance over the rows
        ind = view.group(centre + self.unrest_gain * spread, "mean")
        return F.avg_pool1d(ind[:, None, :], self.smooth, stride=1, padding=self.smooth // 2,
                            count_include_pad=False)[:, 0, :]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        ind = self._indicator(view)
        own_rows = view.positions >= view.query_positions.min()
        return Keep.from_topk(torch.where(own_rows, torch.full_like(ind, float("inf")), ind),
                              view.budget, view.valid)
