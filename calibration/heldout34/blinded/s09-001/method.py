"""Span Floor: reconstruction-attention eviction with a floor for every stretch of the context.

Builds on KVzip (score each KV pair by the maximum attention it gets while the model re-reads the context,
arXiv 2505.23416) and on the idea of keeping contiguous context coverage from ChunkKV (arXiv 2502.00299) and
StreamingLLM's sinks (arXiv 2309.17453). New here: the context is cut into equal spans and each span is
guaranteed a floor (a quarter of its proportional share of the budget, filled with its own best tokens) before
the rest of the budget goes to the globally best tokens, so a budget spent on one dense passage cannot leave
another stretch of the document with nothing at all.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SpanFloor(EvictionMethod):
    name = "span_floor"
    reconstruction_queries = True
    query_window = 32
    spans = 8
    floor_share = 0.25
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        score = view.group(view.attention(reduce="max"), "max").masked_fill(~valid, float("-inf"))
        score[:, : self.sinks] = float("inf")
        floor = int(self.floor_share * view.budget / self.spans)
        out = []
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            s = score[h, :c].clone()
            sure = torch.zeros(c, dtype=torch.bool)
            if floor > 0:
                for part in torch.arange(c).tensor_split(self.spans):
                    if part.numel():
                        sure[part[s[part].topk(min(floor, part.numel())).indices]] = True
            s[sure] = float("inf")
            out.append(s.topk(min(view.budget, c)).indices.sort().values)
        return Keep(tuple(out))
