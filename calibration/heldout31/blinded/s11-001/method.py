"""Runner-Up: the reconstruction pass, scored by its second-highest vote.

KVzip scores each cached pair by the largest attention any repeat query pays it. A single spiking row can lift a
pair that the rest of the repeat never uses again; a pair the repeat really needs is usually read by more than one
row. Runner-Up keeps, per query head, the two largest attentions each pair receives over the whole repeat pass
(computed chunk by chunk, never repeat x context), scores the pair by the second of them, takes the max over the
query heads of its group, and keeps the top pairs plus the first 4 tokens.
Builds on KVzip (Kim et al., 2025) and its reconstruction pass; the second order statistic is the new part.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RunnerUp(EvictionMethod):
    name = "runner_up"
    reconstruction_queries = True
    sinks = 4
    rows = 128

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = view.queries
        h_q, t = q.shape[0], view.n_tokens
        best = torch.zeros(h_q, 2, t, device=view.keys.device)
        for start in range(0, q.shape[1], self.rows):
            chunk = view.attention(q[:, start:start + self.rows])            # (H_q, c, T), all keys visible
            both = torch.cat([best, chunk], dim=1)
            best = both.topk(2, dim=1).values
        second = best[:, 1] if q.shape[1] > 1 else best[:, 0]
        scores = view.group(second, "max")
        scores[:, : self.sinks] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
