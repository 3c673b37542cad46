"""Final-glance selection (board A).

One look, at the very end of the prompt. The last query row (the end of the question) is what the first decoded token
will most resemble, so the cache is cut once, right after prefill, by that row alone: for every KV head, the strongest
response over its query heads, plus a small frame of opening and closing tokens.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class FinalGlance(EvictionMethod):
    name = "final_glance"
    query_window = 1
    frame_open = 4
    frame_close = 16

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        glance = view.attention(view.queries[:, -1:], reduce="sum")  # (H_q, T), non-causal: the row is the last
        strength = view.group(glance, "max")
        pos = view.positions
        last = pos.masked_fill(~view.valid_mask(), -1).amax(dim=-1, keepdim=True)
        frame = (pos < self.frame_open) | (pos > last - self.frame_close)
        return Keep.from_topk(strength.masked_fill(frame, float("inf")), view.budget, view.valid)
