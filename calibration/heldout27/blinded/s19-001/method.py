"""Lantern channels (board A): rate the context through the few feature channels the question lights up.

Most of a head's query-key product sits in a handful of channels. For each KV head we light the ``n_lit``
channels where the question's queries and the context's keys are both large (mean |q| x mean |k| per channel),
compute the question's attention from those channels alone, and keep the tokens it favours, plus the newest
``tail`` tokens. Cheap, and less noisy than the full product on a long, repetitive context.
"""

from __future__ import annotations

import numpy as np
import torch

from harness import EvictionMethod, Keep, LayerView


class LanternChannels(EvictionMethod):
    name = "lantern_channels"
    question_queries = True
    n_lit = 8
    tail = 8

    def _lit(self, q: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Indices of the lit channels of one KV head: q (G, N, D), k (T, D) as arrays."""
        strength = np.abs(q).mean(axis=(0, 1)) * np.abs(k).mean(axis=0)
        lit = np.argpartition(-strength, self.n_lit - 1)[: self.n_lit]
        return np.sort(lit)

    def select(self, view: LayerView) -> Keep:
        t, h = view.n_tokens, view.n_kv_heads
        if view.budget >= t or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        q = view.queries.float().reshape(h, g, -1, view.queries.shape[-1])  # (H_kv, G, N, D)
        k = view.keys.float()
        qpos = view.query_positions.to(view.positions.device)
        votes = torch.zeros(h, t, device=k.device)
        for i in range(h):
            lit = torch.from_numpy(self._lit(q[i].cpu().numpy(), k[i].cpu().numpy())).to(k.device)
            q_lit = q[i].index_select(-1, lit)  # (G, N, r)
            k_lit = k[i].index_select(-1, lit)  # (T, r)
            logits = torch.einsum("gnr,tr->gnt", q_lit, k_lit) * view.model.scale
            ahead = view.positions[i][None, None, :] > qpos[None, :, None]
            if view.valid is not None:
                ahead = ahead | ~view.valid[i][None, None, :]
            votes[i] = logits.masked_fill(ahead, float("-inf")).softmax(dim=-1).nan_to_num(0.0).sum(dim=(0, 1))
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        for i in range(h):
            n = int(counts[i])
            votes[i, max(0, n - self.tail): n] = float("inf")
        return Keep.from_topk(votes, view.budget, view.valid)
