import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Two-window agreement: keep what two disjoint recent query windows both attend to."""

    name = "two_window_agreement"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        attn = view.attention()                                    # (Hq, 32, T)
        half = attn.shape[1] // 2
        early = attn[:, :half].sum(dim=1)
        late = attn[:, half:].sum(dim=1)
        early = early / early.sum(dim=-1, keepdim=True)
        late = late / late.sum(dim=-1, keepdim=True)
        score = view.group(torch.minimum(early, late), "mean")
        score[:, -attn.shape[1]:] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
