"""Regulars: keep the tokens that keep turning up among the ones a query really reads."""

import torch

from harness import EvictionMethod, Keep, LayerView


class Regulars(EvictionMethod):
    name = "regulars"
    query_window = 32      # the stretch of recent steps over which appearances are counted
    protect_recent = 8

    def appearances(self, view: LayerView) -> torch.Tensor:
        probs = view.attention()                                   # (H_q, N, T), causal
        qpos = view.query_positions.to(view.positions.device)
        visible = (view.positions[:, None, :] <= qpos[None, :, None])      # (H_kv, N, T)
        if view.valid is not None:
            visible = visible & view.valid[:, None, :]
        n_vis = visible.sum(-1, keepdim=True).clamp_min(1).float()         # (H_kv, N, 1)
        bar = (1.0 / n_vis).repeat_interleave(view.model.group_size, dim=0)  # (H_q, N, 1): a flat row's value
        shows = (probs > bar).float().sum(dim=1)                           # (H_q, T)
        return view.group(shows, "sum")

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self.appearances(view) + view.positions.float() * 1e-4   # ties: newer first
        valid = view.valid_mask()
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            score[h, max(0, c - self.protect_recent): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
