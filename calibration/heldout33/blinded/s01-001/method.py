"""Pivot Tally: decode-time eviction that counts, for every cached token, how many recent steps leaned on it."""

import torch

from harness import EvictionMethod, Keep, LayerView


class PivotTally(EvictionMethod):
    name = "pivot_tally"
    query_window = 512
    anchor = 4
    tail = 32

    def select(self, view: LayerView) -> Keep:
        tally = view.recall("tally")
        ok = view.valid_mask()
        if view.queries is not None:
            done = view.state.get("done", -1)
            fresh = view.query_positions > done
            if bool(fresh.any()):
                probs = view.attention()[:, fresh]                      # (Hq, n, T) causal
                qpos = view.query_positions[fresh]
                g = view.model.group_size
                vis = (view.positions[:, None, :] <= qpos[None, :, None]) & ok[:, None, :]
                vis = vis.repeat_interleave(g, dim=0)                   # (Hq, n, T)
                fair = 1.0 / vis.sum(-1, keepdim=True).clamp_min(1)
                hits = ((probs > fair) & vis).float().sum(1)            # (Hq, T)
                tally = tally + view.group(hits, "sum")
                view.state["done"] = int(qpos.max())
        view.remember("tally", tally)
        pos = view.positions.masked_fill(~ok, -1)
        newest = pos.max(dim=1, keepdim=True).values
        guard = (pos >= 0) & ((pos < self.anchor) | (pos > newest - self.tail))
        return Keep.from_topk(tally.masked_fill(guard, float("inf")), view.budget, view.valid)
