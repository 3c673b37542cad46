"""Length-fair holistic scoring (board A, question-aware prefill).

Summing attention over many queries is biased: a query that sees t tokens spreads its softmax over t entries, so the
entropy of early queries is low and late queries' attention is diluted, and the sum favours whatever early rows
happened to see. Length-fair scoring sharpens each row's logits by log(t) / log(t_ref) so that every row's softmax
has a comparable spread whatever its length, accumulates the sharpened attention over every prompt row handed over
(question span and closing rows), and multiplies by the size of the token's value, since that is what the output
receives. Opening tokens are pinned.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class LengthFairHolistic(EvictionMethod):
    name = "length_fair_holistic"
    query_window = 64
    question_queries = True
    t_ref = 512.0
    pinned = 4

    def select(self, view: LayerView) -> Keep:
        g = view.model.group_size
        live = view.valid_mask()
        qpos = view.query_positions
        q = view.queries.float()
        acc = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        for kv in range(view.n_kv_heads):
            k = view.keys[kv].float()                                  # (T, D)
            kp = view.positions[kv]
            for j in range(g):
                rows = q[kv * g + j]                                   # (N, D)
                logits = rows @ k.T * view.model.scale                 # (N, T)
                vis = (kp[None, :] <= qpos[:, None]) & live[kv][None, :]
                n_vis = vis.sum(dim=1, keepdim=True).clamp_min(2).float()
                sharpen = (n_vis.log() / math.log(self.t_ref)).clamp_min(1.0)
                probs = (logits * sharpen).masked_fill(~vis, float("-inf")).softmax(dim=1).nan_to_num(0.0)
                acc[kv] += probs.sum(dim=0)
        holistic = acc * view.values.float().norm(dim=-1)
        holistic[:, : self.pinned] = float("inf")
        return Keep.from_topk(holistic, view.budget, view.valid)
