"""Staircase Memory: decode-time eviction in which every layer keeps a different stretch of the past.

When a layer's cache is full it keeps its 4 first tokens and its newest quarter of the budget, and spends the
rest on one contiguous stretch of the older middle. Where that stretch sits depends on the layer's depth: the
first layer keeps the stretch right after the first tokens, the last layer the stretch right before its newest
tokens, and the layers between are spaced evenly in between, a staircase. Read together, the stack still covers
the whole past although no layer holds more than its cap. Each time a layer fills up the staircase is laid again
over what the layer now holds, so old stretches are compacted step by step. No attention is computed.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class StaircaseMemory(EvictionMethod):
    name = "staircase_memory"
    head_tokens = 4
    tail_share = 0.25

    def _step(self, view: LayerView) -> float:
        layers = view.model.attention_layers or tuple(range(view.model.n_layers))
        if view.layer not in layers or len(layers) < 2:
            return 0.0
        return layers.index(view.layer) / (len(layers) - 1)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        counts = view.valid_mask().sum(dim=1)
        step = self._step(view)
        picks = []
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            b = min(view.budget, n)
            head = min(self.head_tokens, b)
            tail = min(max(1, int(b * self.tail_share)), b - head)
            span = b - head - tail
            middle = n - head - tail                     # tokens between the first ones and the newest ones
            start = head + int(round(step * max(0, middle - span)))
            idx = torch.cat([
                torch.arange(0, head),
                torch.arange(start, start + span),
                torch.arange(n - tail, n),
            ]).to(view.keys.device)
            picks.append(idx.unique(sorted=True))
        return Keep(tuple(picks))
