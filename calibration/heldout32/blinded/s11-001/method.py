"""Even Voice (board B_offline): in the reconstruction pass every replay query gets an equal voice: its attention
row is divided by the row's own maximum before the rows are summed, so the queries that spread their attention
(where the replay is uncertain) weigh as much as the sharp ones. Sinks kept."""

import torch

from harness import EvictionMethod, Keep, LayerView


class EvenVoice(EvictionMethod):
    name = "even_voice"
    reconstruction_queries = True
    chunk = 128
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        total = torch.zeros(view.model.n_heads, view.n_tokens, device=view.keys.device)
        for s in range(0, view.queries.shape[1], self.chunk):
            rows = view.attention(view.queries[:, s: s + self.chunk])   # (H_q, c, T), not causal: the replay follows
            total += (rows / rows.amax(-1, keepdim=True).clamp_min(1e-9)).sum(1)
        score = view.group(total, "mean")
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
