"""Soft Landing (board C): at each cap the tokens with the lowest mean attention per query that saw them give
way; the newest tokens and the sinks stay."""

import torch

from harness import EvictionMethod, Keep, LayerView


class SoftLanding(EvictionMethod):
    name = "soft_landing"
    query_window = 64
    sinks = 4
    newest = 24

    def select(self, view: LayerView) -> Keep:
        heard = view.recall("heard")
        looks = view.recall("looks")
        if view.queries is not None:
            fresh = view.query_positions > view.state.get("mark", -1)
            if bool(fresh.any()):
                qpos = view.query_positions[fresh]
                got = view.attention(view.queries[:, fresh], reduce="sum")       # (H_q, T)
                heard = heard + view.group(got, "mean")
                looks = looks + (view.positions[:, :, None] <= qpos[None, None, :]).sum(-1).float()
                view.state["mark"] = int(qpos.max())
        view.remember("heard", heard)
        view.remember("looks", looks)
        mean = heard / looks.clamp_min(1.0)
        counts = view.valid_mask().sum(1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            mean[h, : min(self.sinks, n)] = float("inf")
            mean[h, max(0, n - self.newest): n] = float("inf")
        return Keep.from_topk(mean, view.budget, view.valid)
