"""Depth-stratified decoding cache (board C).

Lower layers of a reasoning model attend locally; upper layers reach back to the problem statement and to a
few pivotal earlier steps. We stratify the cache by depth. Every layer keeps ten anchor tokens at the very
start of the sequence and a contiguous recent span. In the lower third of the network that is all; from the
first layer past one third of the depth upward, a quarter of the layer's cap is set aside for the middle tokens
that the newest queries address most strongly (their raw dot-product logits, max over the newest 8 queries and
the KV head's query heads), so deep layers can still reach the pivotal steps.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class DepthStratified(EvictionMethod):
    name = "depth_stratified"
    query_window = 8
    anchors = 10
    middle_share = 0.25
    _attn_layers: tuple = ()

    def setup(self, model):
        self._attn_layers = tuple(model.attention_layers)

    def _upper(self, layer: int) -> bool:
        order = self._attn_layers or (layer,)
        d = order.index(layer) if layer in order else 0
        return d >= len(order) // 3 and len(order) > 1

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        g = view.model.group_size
        deep = self._upper(view.layer) and view.queries is not None
        out = []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            b = min(view.budget, n)
            a = min(self.anchors, b // 8)
            mid_n = int(self.middle_share * b) if deep else 0
            recent = b - a - mid_n
            keep = torch.zeros(n, dtype=torch.bool)
            keep[:a] = True
            keep[n - recent:] = True
            if mid_n:
                q = view.queries[h * g:(h + 1) * g].float().reshape(-1, view.keys.shape[-1])
                logit = (q @ view.keys[h, :n].float().T).amax(0)
                logit = logit.masked_fill(keep, float("-inf"))
                keep[logit.topk(mid_n).indices] = True
            out.append(keep.nonzero().flatten())
        return Keep(tuple(out))
