"""Return Times: in a long chain of reasoning a step is often picked up again after a pause: a number computed
early is read again three lines later, then again at the end. Each token's history of being looked at tells
how long its pauses tend to be; a token that has been quiet for less than its usual pause is still expected
back and is kept, while one that has stayed quiet well past its rhythm is let go."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class ReturnTimes(EvictionMethod):
    name = "return_times"
    query_window = 64
    openers = 4
    newest = 16
    level = 1.0          # a look counts when it exceeds this multiple of an even spread

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        pos = view.positions
        last = view.recall("rt_last", fill=-1.0)
        gap = view.recall("rt_gap", fill=0.0)
        born = pos.float()
        last = torch.where(last < 0, born, last)
        now = float(pos.max())
        if view.queries is not None:
            seen = view.state.get("rt_seen", -1)
            fresh = (view.query_positions > seen).nonzero().flatten()
            if fresh.numel():
                att = view.attention()[:, fresh]                           # (H_q, F, T)
                att = view.group(att, "max")                                # (H_kv, F, T)
                qp = view.query_positions[fresh]
                visible = (pos[:, None, :] <= qp[None, :, None]) & valid[:, None, :]
                even = 1.0 / visible.sum(-1, keepdim=True).clamp_min(1)
                hit = (att > self.level * even) & visible
                for i in range(fresh.numel()):                              # step by step, oldest first
                    t = float(qp[i])
                    h = hit[:, i]
                    gap = torch.where(h, torch.maximum(gap, t - last), gap)
                    last = torch.where(h, torch.full_like(last, t), last)
                view.state["rt_seen"] = int(view.query_positions.max())
                now = float(qp.max())
        view.remember("rt_last", last)
        view.remember("rt_gap", gap)
        quiet = now - last
        score = (gap + 1.0) / (quiet + 1.0)
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, :min(self.openers, n)] = float("inf")
            score[h, max(0, n - self.newest):n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
