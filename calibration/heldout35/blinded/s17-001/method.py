"""Neediest Query: fill the budget by always serving the question query that is worst served so far.

Builds on SnapKV's use of the question's attention (and keeps the question span, as SnapKV keeps its window).
Summing attention over the question lets a few strongly-attending question tokens decide everything. Here every
(query head, question token) pair of a KV head is a reader; the budget is filled one token at a time, each time
giving the reader whose attention mass is least covered by the kept tokens the token it attends to most among
those not yet kept. The kept set therefore covers every reader a little before it covers any reader a lot.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class NeediestQuery(EvictionMethod):
    name = "neediest_query"
    question_queries = True
    sinks = 2

    def _serve(self, a: torch.Tensor, start: torch.Tensor, b: int) -> torch.Tensor:
        """a (R, T) attention of the readers; start (T,) bool already kept; b total to keep."""
        kept = start.clone()
        covered = (a * kept).sum(-1)
        while int(kept.sum()) < b:
            r = int(covered.argmin())
            row = a[r].masked_fill(kept, float("-inf"))
            j = int(row.argmax())
            if row[j] == float("-inf"):
                break
            kept[j] = True
            covered += a[:, j]
        return kept

    def select(self, view: LayerView) -> Keep:
        b, t = view.budget, view.n_tokens
        if b >= t or view.queries is None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        attn = view.attention()                               # (H_q, N, T)
        g, out = view.model.group_size, []
        qmin = view.query_positions.min() if view.query_positions is not None else None
        for h in range(view.n_kv_heads):
            start = torch.zeros(t, dtype=torch.bool, device=attn.device)
            start[: self.sinks] = True
            if qmin is not None:
                start |= view.positions[h] >= qmin
            if int(start.sum()) >= b:
                pos = view.positions[h].float().masked_fill(~start, float("-inf"))
                out.append(pos.topk(b).indices.sort().values)
                continue
            readers = attn[h * g:(h + 1) * g].reshape(-1, t)
            out.append(self._serve(readers, start, b).nonzero().flatten())
        return Keep(tuple(out))
