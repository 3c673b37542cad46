"""Rolling shortlist (board A, question-aware prefill).

The context is read in segments, front to back. A shortlist of at most `budget` context entries is carried along;
each new segment is merged into it, the question rows are softmaxed over just the shortlist + segment, and the
shortlist is cut back to the entries that received the most of that question mass. The question/closing rows are
kept as they are.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _group_logits(q: torch.Tensor, k: torch.Tensor, group: int, scale: float) -> torch.Tensor:
    """q (H_q, N, D), k (H_kv, S, D) -> logits (H_kv, group, N, S)."""
    h_kv, s, d = k.shape
    return torch.einsum("hgnd,hsd->hgns", q.float().view(h_kv, group, -1, d), k.float()) * scale


class RollingShortlist(EvictionMethod):
    name = "rolling_shortlist"
    query_window = 24
    question_queries = True
    segments = 8

    def _shortlist(self, view: LayerView, head: int, ctx: torch.Tensor, keep_n: int) -> torch.Tensor:
        g = view.model.group_size
        q = view.queries[head * g:(head + 1) * g]  # (g, N, D)
        seg = max(1, -(-ctx.numel() // self.segments))
        held = ctx[:0]
        for start in range(0, ctx.numel(), seg):
            pool = torch.cat([held, ctx[start:start + seg]])
            logits = _group_logits(q, view.keys[head:head + 1, pool], g, view.model.scale)[0]  # (g, N, S)
            mass = logits.softmax(dim=-1).sum(dim=(0, 1))
            if pool.numel() > keep_n:
                pool = pool[mass.topk(keep_n).indices.sort().values]
            held = pool
        return held

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        first_row = view.query_positions.min()
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            real = valid[h].nonzero().squeeze(-1)
            tail = real[view.positions[h, real] >= first_row]
            ctx = real[view.positions[h, real] < first_row]
            room = max(0, view.budget - tail.numel())
            if room == 0:
                out.append(tail[-view.budget:] if view.budget > 0 else tail[:0])
                continue
            out.append(torch.cat([self._shortlist(view, h, ctx, room), tail]).sort().values)
        return Keep(tuple(out))
