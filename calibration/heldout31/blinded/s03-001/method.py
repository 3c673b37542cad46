"""Tides: tokens come back on a rhythm; keep the ones whose tide is still due.

While a trace is being written, a token is "touched" whenever a new row gives it more than a fair share of its
attention (more than 1 / the number of keys the row can see, taken over the query heads of the group). Each token
carries the step it was last touched and the longest quiet stretch it has ever had between two touches (its
tide). A token last touched long ago but with a long tide is still due; one that has been quiet much longer than
its tide has gone out. The score is (tide + 1) / (quiet + 1); the newest 16 tokens are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class Tides(EvictionMethod):
    name = "tides"
    query_window = 64
    recent = 16

    def on_decode(self, view: LayerView) -> Keep:
        return self.select(view)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        pos = view.positions
        valid = view.valid_mask()
        last = view.recall("touched", fill=-1.0)
        last = last + (last < 0) * (pos.float() + 1)                     # arriving counts as a touch
        tide = view.recall("tide", fill=0.0)
        if view.queries is not None:
            seen_up_to = view.state.get("seen", -1)
            fresh = view.query_positions > seen_up_to
            if bool(fresh.any()):
                qpos = view.query_positions[fresh]
                attn = view.attention(view.queries[:, fresh])            # (H_q, n, T), causal
                visible = ((pos[:, None, :] <= qpos[None, :, None]) & valid[:, None, :]).sum(-1)   # (H_kv, n)
                share = view.group(attn, "max") * visible[..., None]     # > 1: more than a fair share
                touched = share > 1.0
                steps = qpos[None, :, None].float().expand_as(share)
                stamp = steps.masked_fill(~touched, -1.0)
                running = torch.cat([last[:, None, :], stamp], dim=1).cummax(dim=1).values   # (H_kv, n+1, T)
                before = running[:, :-1]
                quiet_gaps = (steps - before) * touched
                tide = torch.maximum(tide, quiet_gaps.max(dim=1).values)
                last = running[:, -1]
                view.state["seen"] = int(view.query_positions.max())
        view.remember("touched", last)
        view.remember("tide", tide)
        now = float(view.query_positions.max()) if view.query_positions is not None else float(pos.max())
        quiet = (now - last).clamp_min(0)
        scores = (tide + 1) / (quiet + 1)
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - self.recent):n] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
