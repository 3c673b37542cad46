"""Square-Root Exposure: accumulated attention divided by the square root of how many queries could see it."""

import torch

from harness import EvictionMethod, Keep, LayerView


class SqrtExposure(EvictionMethod):
    name = "sqrt_exposure"
    query_window = 512
    recent = 32

    def select(self, view: LayerView) -> Keep:
        total, seen = view.recall("mass"), view.recall("seen")
        valid = view.valid_mask()
        if view.queries is not None:
            last = view.state.get("last", -1)
            new = view.query_positions > last
            if bool(new.any()):
                total = total + view.group(view.attention()[:, new].sum(dim=1), "sum")
                qp = view.query_positions[new]
                seen = seen + (qp[None, None, :] >= view.positions[:, :, None]).sum(-1).float()
                view.state["last"] = int(qp.max())
        view.remember("mass", total)
        view.remember("seen", seen)
        score = total / seen.clamp_min(1).sqrt()
        p = view.positions.masked_fill(~valid, -1)
        score = score.masked_fill(p > p.max(1, keepdim=True).values - self.recent, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
