"""Closing-gaze consensus (board A, question-aware prefill).

The very last prompt position is the model's own summary of what the question asks for. Every query head of
the layer looks from there at the context; the heads' views are pooled into one consensus per layer, and every KV
head of the layer then keeps the same token set, so the surviving context stays a coherent sub-document.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _consensus(gaze: torch.Tensor) -> torch.Tensor:
    """Pool the per-head views (H_q, T) into one layer-wide profile (T,)."""
    return torch.einsum("ht->t", gaze)


class ClosingGaze(EvictionMethod):
    name = "closing_gaze"
    query_window = 1  # only the final prompt row

    def select(self, view: LayerView) -> Keep:
        n_heads, length = view.n_kv_heads, view.n_tokens
        if view.budget >= length or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        gaze = view.attention(reduce="sum")  # (H_q, T): the final row's softmax per query head
        profile = _consensus(gaze)
        shared = profile.unsqueeze(0).repeat(n_heads, 1)
        return Keep.from_topk(shared, view.budget, view.valid)
