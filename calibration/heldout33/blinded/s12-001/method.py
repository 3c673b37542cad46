"""Second Look: during the offline re-read, a token counts by its two strongest looks, not its single strongest."""

import torch

from harness import EvictionMethod, Keep, LayerView


class SecondLook(EvictionMethod):
    name = "second_look"
    reconstruction_queries = True
    chunk = 256

    def select(self, view: LayerView) -> Keep:
        H, T, _ = view.keys.shape
        if view.queries is None or view.budget >= T:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        first = torch.zeros(view.queries.shape[0], T)
        second = torch.zeros_like(first)
        for i in range(0, view.queries.shape[1], self.chunk):
            a = view.attention(view.queries[:, i:i + self.chunk])           # (Hq, c, T)
            top2 = torch.cat([first[:, None], second[:, None], a], 1).topk(2, dim=1).values
            first, second = top2[:, 0], top2[:, 1]
        score = view.group(first + second, "max")
        score = score.masked_fill(view.positions < 4, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
