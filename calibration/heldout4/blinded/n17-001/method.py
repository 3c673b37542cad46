import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Local prominence: keep tokens whose question attention stands out from their immediate neighbourhood
    (attention minus the local median over +-8 tokens), not tokens that merely sit in a well-attended stretch."""

    name = "local_prominence"
    question_queries = True
    radius = 8
    base_weight = 0.1

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if view.queries is None or b >= t:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        a = view.group(view.attention(reduce="sum"), "mean")          # (H_kv, T)
        r = self.radius
        padded = F.pad(a[:, None], (r, r), mode="replicate")[:, 0]
        med = padded.unfold(-1, 2 * r + 1, 1).median(dim=-1).values  # (H_kv, T)
        s = (a - med).clamp_min(0) + self.base_weight * a
        s = s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(s, b, view.valid)
