"""Fresh Turn (board B_online): the context's closing rows say what is read; a key that turns away from the key
before it (low cosine to its predecessor) starts something new. A token's score is its window attention times
(0.5 + its turn), so the start of each new item is favoured over its continuation."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class FreshTurn(EvictionMethod):
    name = "fresh_turn"
    query_window = 32
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        read = view.group(view.attention(reduce="sum"), "mean")        # (H_kv, T)
        k = F.normalize(view.keys.float(), dim=-1)
        cos = (k[:, 1:] * k[:, :-1]).sum(-1)
        turn = torch.cat([torch.ones_like(cos[:, :1]), (1.0 - cos) / 2], dim=1)
        score = read * (0.5 + turn)
        score = F.max_pool1d(score[:, None], 3, stride=1, padding=1)[:, 0]
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
