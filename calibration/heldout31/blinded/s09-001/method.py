"""Rising Tide: keep what the trace keeps reading, and what it is starting to read more.

While decoding, every block of new rows gives each token its mean attention (over the rows that can see it and the
query heads of its group). A slowly forgetting average of those block means (factor 0.8 per call) says what the
trace has been reading; its rise since the previous block (positive part only) says what it is turning to. The
score is the average plus half the rise; the newest 16 tokens are kept.
Builds on H2O's accumulated attention (Zhang et al., 2023) and A2SF's forgetting factor (Jo et al., 2024); the
rise term, which rewards a token whose attention is growing before its average has caught up, is the new part.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RisingTide(EvictionMethod):
    name = "rising_tide"
    query_window = 64
    keep_factor = 0.8
    rise_weight = 0.5
    recent = 16

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        avg = view.recall("avg")
        before = view.recall("block")
        now = torch.zeros_like(avg)
        if view.queries is not None:
            fresh = view.query_positions > view.state.get("seen", -1)
            if bool(fresh.any()):
                qpos = view.query_positions[fresh]
                total = view.group(view.attention(view.queries[:, fresh], reduce="sum"), "mean")
                readers = (qpos[None, None, :] >= view.positions[:, :, None]).sum(-1).clamp_min(1)
                now = total / readers
                view.state["seen"] = int(view.query_positions.max())
        avg = self.keep_factor * avg + (1 - self.keep_factor) * now
        rise = (now - before).clamp_min(0)
        view.remember("avg", avg)
        view.remember("block", now)
        scores = avg + self.rise_weight * rise
        counts = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - self.recent):n] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
