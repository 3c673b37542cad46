"""Square-root exposure (board C, decode-time cap).

Builds on H2O (Zhang et al., 2023, arXiv 2306.14048) and on the normalised variant kvpress calls observed
attention (the mean attention received rather than the sum). The sum favours old tokens simply because more rows
have seen them; the mean over-rewards new tokens seen by only a few rows. Here the accumulated attention of each
token (every decode row since the previous round added, carried by position) is divided by the square root of the
number of rows that could see it, a midpoint between the two. The newest 16 tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SqrtExposure(EvictionMethod):
    name = "sqrt_exposure"
    query_window = 1 << 20
    newest = 16

    def select(self, view: LayerView) -> Keep:
        acc = view.recall("acc")
        seen = view.recall("seen")
        if view.queries is not None:
            last = view.state.get("last", -1)
            fresh = view.query_positions > last
            if bool(fresh.any()):
                acc = acc + view.group(view.attention(view.queries[:, fresh], reduce="sum"), "sum")
                qpos = view.query_positions[fresh]
                seen = seen + (qpos[None, None, :] >= view.positions[:, :, None]).sum(-1)
                view.state["last"] = int(view.query_positions.max())
        view.remember("acc", acc)
        view.remember("seen", seen)
        score = acc / seen.clamp_min(1).sqrt()
        ok = view.valid_mask()
        counts = ok.sum(1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - self.newest): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
