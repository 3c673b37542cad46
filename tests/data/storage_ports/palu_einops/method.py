"""Group latents: one low-dimensional code per token shared by the layer's heads (their features stacked), found
from the keys themselves; queries and keys are compared through that code."""

import torch
from einops import rearrange

from harness.api import EvictionMethod, Keep, LayerView


class GroupLatents(EvictionMethod):
    name = "group_latents"
    query_window = 8
    width = 24

    def select(self, view: LayerView) -> Keep:
        h, t, d = view.keys.shape
        flat = rearrange(view.keys.float(), "h t d -> t (h d)")
        centre = flat.mean(dim=0, keepdim=True)
        u, s, v = torch.svd_lowrank(flat - centre, q=self.width)
        back = rearrange((u * s) @ v.T + centre, "t (h d) -> h t d", h=h)
        q = view.group(view.queries.float(), "mean")
        score = torch.einsum("hnd,htd->hnt", q, back).softmax(-1).amax(1)
        return Keep.from_topk(score, view.budget, view.valid)
