"""Successive-halving tournament over the context (board A)."""

import torch

from harness import EvictionMethod, Keep, LayerView


class Tournament(EvictionMethod):
    name = "tournament"
    question_queries = True
    query_window = 0
    min_round = 64

    def _logits(self, view: LayerView, h: int) -> torch.Tensor:
        g = view.model.group_size
        q = view.queries[h * g:(h + 1) * g].float()                 # (g, Nq, d)
        k = view.keys[h].float()                                    # (T, d)
        return torch.matmul(q, k.t()) * view.model.scale            # (g, Nq, T)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        q0 = int(view.query_positions.min())
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            pos = view.positions[h, idx]
            tail = idx[pos >= q0]                                   # the question itself
            body = idx[pos < q0]
            seats = view.budget - tail.numel()
            if seats <= 0:
                out.append(tail[-view.budget:])
                continue
            if body.numel() <= seats:
                out.append(torch.cat([body, tail]))
                continue
            logits = self._logits(view, h)
            step = max(self.min_round, seats)
            holders = body[:0]
            for start in range(0, body.numel(), step):
                entrants = torch.cat([holders, body[start:start + step]])
                lg = logits[:, :, entrants]
                w = torch.exp(lg - lg.logsumexp(dim=-1, keepdim=True)).sum(dim=(0, 1))
                if entrants.numel() > seats:
                    order = torch.sort(w, descending=True).indices[:seats]
                    holders = entrants[order]
                else:
                    holders = entrants
            out.append(torch.cat([holders.sort().values, tail]))
        return Keep(tuple(out))
