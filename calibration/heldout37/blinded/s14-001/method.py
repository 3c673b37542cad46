"""Root Tally: decode-time eviction by accumulated attention divided by the square root of how many queries
have had the chance to attend to the token."""

import torch

from harness import EvictionMethod, Keep, LayerView


class RootTally(EvictionMethod):
    name = "root_tally"
    query_window = 64      # at least the block: every query since the previous call is handed over
    sinks = 4
    recent = 16

    def select(self, view: LayerView) -> Keep:
        total = view.recall("tally")
        chances = view.recall("chances")
        if view.queries is not None and view.query_positions is not None:
            qpos = view.query_positions
            fresh = qpos > view.state.get("tally_upto", -1)
            if bool(fresh.any()):
                probs = view.attention()[:, fresh]                             # (H_q, F, T) causal
                total = total + view.group(probs.sum(dim=1), "sum")
                fpos = qpos[fresh].to(view.positions.device)
                chances = chances + (fpos[None, None, :] >= view.positions[:, :, None]).sum(-1).float()
                view.state["tally_upto"] = int(qpos.max())
        view.remember("tally", total)
        view.remember("chances", chances)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = total / chances.clamp_min(1.0).sqrt()
        valid = view.valid_mask()
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            score[h, : self.sinks] = float("inf")
            score[h, max(0, c - self.recent): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
