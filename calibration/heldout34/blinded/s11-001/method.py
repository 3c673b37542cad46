"""Rolling Shortlist: read the context piece by piece and keep a shortlist the question re-ranks each time."""

import torch

from harness import EvictionMethod, Keep, LayerView


class RollingShortlist(EvictionMethod):
    name = "rolling_shortlist"
    question_queries = True
    piece = 128

    def _rank(self, q: torch.Tensor, k: torch.Tensor, scale: float) -> torch.Tensor:
        logits = torch.einsum("hnd,td->hnt", q, k) * scale                 # (g, N, t)
        return (logits - logits.logsumexp(dim=-1, keepdim=True)).exp().sum(dim=(0, 1))

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        start = int(view.query_positions.min())
        g = view.model.group_size
        out = []
        for h in range(view.n_kv_heads):
            ctx = int((view.positions[h] < start).sum())
            tail = torch.arange(ctx, n)                                       # the question: always kept
            room = max(0, view.budget - tail.numel())
            q = view.queries[h * g:(h + 1) * g].float()
            short = torch.empty(0, dtype=torch.long)
            for lo in range(0, ctx, self.piece):
                cand = torch.cat([short, torch.arange(lo, min(ctx, lo + self.piece))])
                if cand.numel() <= room:
                    short = cand
                    continue
                w = self._rank(q, view.keys[h, cand].float(), view.model.scale)
                short = cand[w.topk(room).indices].sort().values
            idx = torch.cat([short, tail])[-view.budget:] if view.budget > 0 else short[:0]
            out.append(idx)
        return Keep(tuple(out))
