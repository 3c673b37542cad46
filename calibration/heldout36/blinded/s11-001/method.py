"""Sharp Recall: rank context tokens by how sharply the model's own re-read of the context retrieves
them.

Board B_offline offers a one-off pass in which the model re-reads the context (KVzip's reconstruction
queries). At the model's own temperature a re-read query spreads attention over near-duplicates; with the
logits sharpened (queries scaled by `sharpen`) each query concentrates on the token it is actually
copying. Each token scores the largest sharpened attention any reconstruction query pays it, maximised
over a KV head's query heads.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SharpRecall(EvictionMethod):
    name = "sharp_recall"
    query_window = 16
    reconstruction_queries = True
    sharpen = 2.0
    chunk = 256
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = view.queries.float() * self.sharpen
        best = None
        for start in range(0, q.shape[1], self.chunk):
            part = view.attention(q[:, start:start + self.chunk], reduce="max")  # (H_q, T)
            best = part if best is None else torch.maximum(best, part)
        score = view.group(best, "max")
        score = score.masked_fill(view.positions < self.sinks, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
