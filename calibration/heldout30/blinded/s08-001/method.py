"""Triage: the question sorts the context in spans, not tokens.

The context (everything before the question and the closing rows) is cut into spans of 64 tokens. Each span is
summarised by two corner keys, the channel-wise largest and smallest of its keys; the question and closing rows
are grouped 16 at a time and each group is summarised by its mean query. A group rates a span by the larger of
its two corner products (scaled as the model scales its logits), the ratings are normalised over the spans per
group and summed over the groups and over the KV head's query heads. The first 4 tokens and the question and
closing rows are always kept; whole spans then go in by rating, and whatever room is left goes to the latest
context tokens.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class Triage(EvictionMethod):
    name = "triage"
    question_queries = True
    query_window = 16
    span = 64
    rows_per_group = 16
    lead = 4

    def _ratings(self, keys: torch.Tensor, queries: torch.Tensor, scale: float) -> torch.Tensor:
        """keys (n, D) of the context part, queries (g, N, D) -> one rating per span."""
        n, d = keys.shape
        n_span = -(-n // self.span)
        pad = n_span * self.span - n
        k = keys.float()
        hi = torch.cat([k, k.new_full((pad, d), float("-inf"))]).view(n_span, self.span, d).amax(dim=1)
        lo = torch.cat([k, k.new_full((pad, d), float("inf"))]).view(n_span, self.span, d).amin(dim=1)
        g, rows, _ = queries.shape
        n_grp = -(-rows // self.rows_per_group)
        grp = torch.stack([queries[:, i * self.rows_per_group:(i + 1) * self.rows_per_group].float().mean(dim=1)
                           for i in range(n_grp)], dim=1)                     # (g, G, D)
        rate = torch.maximum(grp @ hi.T, grp @ lo.T) * scale                  # (g, G, S)
        return rate.softmax(dim=-1).sum(dim=(0, 1))

    def _head(self, view: LayerView, h: int, tail_from: int) -> torch.Tensor:
        g = view.model.group_size
        idx = torch.nonzero(view.valid_mask()[h]).flatten()
        pos = view.positions[h, idx]
        size = min(view.budget, idx.numel())
        tail = torch.nonzero(pos >= tail_from).flatten().flip(0)
        lead = torch.nonzero(pos < self.lead).flatten()
        fixed = torch.cat([tail, lead[~torch.isin(lead, tail)]])[:size]
        taken = torch.zeros(idx.numel(), dtype=torch.bool, device=idx.device)
        taken[fixed] = True
        room = size - fixed.numel()
        body = torch.nonzero(~taken & (pos < tail_from)).flatten()
        whole = room // self.span
        if whole > 0 and body.numel() > 0:
            rate = self._ratings(view.keys[h, idx[body]], view.queries[h * g:(h + 1) * g], view.model.scale)
            for s in rate.argsort(descending=True)[:whole].tolist():
                taken[body[s * self.span:(s + 1) * self.span]] = True
        room = size - int(taken.sum())
        if room > 0:
            rest = torch.nonzero(~taken).flatten()
            taken[rest[-room:]] = True
        return idx[taken]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        tail_from = int(view.query_positions.min())
        return Keep(tuple(self._head(view, h, tail_from) for h in range(view.n_kv_heads)))
