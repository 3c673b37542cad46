"""Relay Reader: the question reads the context page by page and hands a shortlist forward.

The context is cut into pages. The shortlist starts empty; at every page the question's queries attend over
shortlist + page only, and the best entries (by that local attention, averaged over each KV head's query heads)
become the new shortlist, sized to the budget left after the question. Entries therefore compete against
their neighbours and the survivors of earlier pages rather than against the whole prompt at once, which keeps
one loud region from flattening the rest. The question span is kept as is.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _pages(n: int, step: int, max_hops: int) -> list[tuple[int, int]]:
    edges = list(range(0, n, step)) + [n]
    spans = list(zip(edges[:-1], edges[1:]))
    return spans if len(spans) <= max_hops else []


class RelayReader(EvictionMethod):
    name = "relay_reader"
    question_queries = True
    query_window = 8
    page = 256
    max_hops = 6

    def _local_pull(self, q: torch.Tensor, keys: torch.Tensor, scale: float, g: int) -> torch.Tensor:
        """q (H_q, N, D), keys (H_kv, S, D) -> (H_kv, S) attention over these keys only, group mean."""
        h_kv = keys.shape[0]
        logits = torch.einsum("hgnd,hsd->hgns", q.float().unflatten(0, (h_kv, g)), keys.float()) * scale
        return logits.softmax(dim=-1).sum(dim=2).mean(dim=1)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g, scale = view.model.group_size, view.model.scale
        valid = view.valid_mask()
        question = view.positions >= view.query_positions.min()
        tie = view.positions.float() * 1e-9  # equal scores: the newer entry wins
        score = tie.clone()
        for h in range(view.n_kv_heads):
            ctx = torch.nonzero(valid[h] & ~question[h]).flatten()
            room = max(0, view.budget - int((question[h] & valid[h]).sum()))
            if room == 0 or ctx.numel() == 0:
                continue
            shortlist = ctx[:0]
            for lo, hi in _pages(int(ctx.numel()), self.page, self.max_hops):
                pool = torch.cat([shortlist, ctx[lo:hi]])
                pull = self._local_pull(view.queries[h * g:(h + 1) * g], view.keys[h:h + 1, pool], scale, g)[0]
                shortlist = pool[pull.topk(min(room, pool.numel())).indices]
                score[h, pool] = tie[h, pool]
                score[h, shortlist] = 1.0 + pull.topk(min(room, pool.numel())).values
        return Keep.from_topk(score.masked_fill(question, float("inf")), view.budget, view.valid)
