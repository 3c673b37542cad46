"""Pot Still: a fixed-size cache distilled every time it fills.

When a layer's cache reaches its cap, the newest 16 queries act as the distiller: the attention they pay
each cached token (summed, mean over a KV head's query heads, scaled to a maximum of 1) is the token's draw.
Each token also gets a novelty term from its key's highest cosine similarity to any other key held by the same
head, weighted by 0.5. The newest 16 tokens stay; the rest are ranked by draw + novelty and the pot is boiled
down to its budget. Nothing is carried between distillations but the pot itself.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class PotStill(EvictionMethod):
    name = "pot_still"
    query_window = 16
    gamma = 0.5

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        if view.queries is not None:
            draw = view.group(view.attention(reduce="sum"), "mean")
        else:
            draw = torch.zeros(valid.shape, device=view.keys.device)
        draw = draw / draw.amax(dim=-1, keepdim=True).clamp_min(1e-9)
        unit = F.normalize(view.keys.float(), dim=-1)
        cos = unit @ unit.transpose(1, 2)                         # (H_kv, T, T)
        cos = cos.masked_fill(~(valid[:, :, None] & valid[:, None, :]), -1.0)
        cos.diagonal(dim1=1, dim2=2).fill_(-1.0)
        overlap = cos.amax(dim=-1)                                # nearest other key in the pot
        score = draw + self.gamma * overlap
        if view.query_positions is not None:
            score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
