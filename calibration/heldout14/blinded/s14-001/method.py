"""Phrase-span recall (board A).

A question rarely points at a single token: it points at a phrase, and the answer sits in the clause around it.
We score each context token by the attention the question rows pay it (summed over the rows and over the KV
head's query heads), turn token scores into phrase scores with a flat window that sums each token's
neighbourhood, and then recall whole spans: every retained peak brings its enclosing span of the context along,
best spans first, until the layer's share is used. The question itself is always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class PhraseSpanRecall(EvictionMethod):
    name = "phrase_span_recall"
    query_window = 8
    question_queries = True
    phrase = 5
    span = 16

    def _evidence(self, view: LayerView) -> torch.Tensor:
        a = view.attention(reduce="sum")  # (H_q, T): question rows summed
        tok = view.group(a, "sum")
        kernel = torch.ones(1, 1, self.phrase, dtype=tok.dtype)
        return F.conv1d(tok[:, None], kernel, padding=self.phrase // 2)[:, 0]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        ev = self._evidence(view).masked_fill(~valid, float("-inf"))
        qstart = int(view.query_positions.min())
        out = []
        for h in range(view.n_kv_heads):
            n_h = int(valid[h].sum())
            b = min(view.budget, n_h)
            pos = view.positions[h]
            keep = torch.zeros(view.n_tokens, dtype=torch.bool)
            fixed = (pos >= qstart) & valid[h]
            if int(fixed.sum()) > b // 2:
                fixed = (pos >= int(view.query_positions.max()) - b // 4) & valid[h]
            keep |= fixed
            seg = torch.div(torch.arange(view.n_tokens), self.span, rounding_mode="floor")
            order = ev[h].argsort(descending=True)
            for t in order.tolist():
                left = b - int(keep.sum())
                if left <= 0 or not bool(valid[h, t]):
                    break
                members = ((seg == seg[t]) & valid[h] & ~keep).nonzero().flatten()
                if members.numel() > left:  # partial span: the members nearest the peak
                    members = members[(members - t).abs().argsort()[:left]]
                keep[members] = True
            out.append(keep.nonzero().flatten())
        return Keep(tuple(out))
