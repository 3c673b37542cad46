"""Runner Up: offline compression by the context-reconstruction pass, where a token is scored by its second
best, not its best, attention from the pass, so that one stray look cannot save it."""

import torch

from harness import EvictionMethod, Keep, LayerView


class RunnerUp(EvictionMethod):
    name = "runner_up"
    reconstruction_queries = True
    rows = 128
    sinks = 4
    tail = 16

    def second_best(self, view: LayerView) -> torch.Tensor:
        q = view.queries
        h_kv, t = view.keys.shape[:2]
        g = view.model.group_size
        top2 = torch.zeros(h_kv, 2, t)
        for s in range(0, q.shape[1], self.rows):
            probs = view.attention(q[:, s: s + self.rows])                # (H_q, c, T): every context key is visible
            cand = probs.reshape(h_kv, g * probs.shape[1], t)            # the group's heads and queries together
            k = min(2, cand.shape[1])
            merged = torch.cat([top2, cand.topk(k, dim=1).values], dim=1)
            top2 = merged.topk(2, dim=1).values
        return top2[:, 1]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self.second_best(view)
        valid = view.valid_mask()
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            score[h, : self.sinks] = float("inf")
            score[h, max(0, c - self.tail): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
