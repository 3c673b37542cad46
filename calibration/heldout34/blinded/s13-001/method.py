"""Recent Need: keep what the newest steps still need, judged against a uniform share."""

import torch

from harness import EvictionMethod, Keep, LayerView


class RecentNeed(EvictionMethod):
    name = "recent_need"
    query_window = 32
    lead = 4
    tail = 32

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        attn = view.attention()                                                   # (H_q, N, T)
        g = view.model.group_size
        pos = view.positions.repeat_interleave(g, dim=0)
        ok = valid.repeat_interleave(g, dim=0)
        visible = ((pos[:, None, :] <= view.query_positions[None, :, None]) & ok[:, None, :]).sum(-1)
        relative = attn * visible[..., None].float()                              # 1.0 = a uniform share
        need = relative.amax(dim=1).reshape(view.n_kv_heads, g, -1).amax(dim=1)
        need = need.masked_fill(~valid, float("-inf"))
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            need[h, : min(self.lead, c)] = float("inf")
            need[h, max(0, c - self.tail): c] = float("inf")
        return Keep.from_topk(need, view.budget, view.valid)
