"""Concave coverage of the reconstruction pass (board B_offline).

KVzip scores each context token by the largest attention any query of the "repeat the context" pass pays it.
A max lets a few queries claim many tokens while other queries end up with nothing retained. Here selection is
greedy maximisation of sum over reconstruction queries of sqrt(attention mass of that query on the kept set):
a query that already has mass kept gains less from one more of its tokens (a concave, submodular coverage
objective), so the budget is spread over the queries. At most 256 reconstruction queries (evenly spaced) are
used; tokens are added in batches of 1/32 of what remains; the first 4 tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ConcaveCoverage(EvictionMethod):
    name = "concave_coverage"
    reconstruction_queries = True
    query_window = 32
    max_queries = 256
    batch_div = 32
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        if view.queries is None or int(counts.max()) <= view.budget:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        nq = view.queries.shape[1]
        if nq > self.max_queries:
            pick = torch.linspace(0, nq - 1, self.max_queries, device=view.queries.device).round().long()
            q, qpos = view.queries[:, pick], view.query_positions[pick]
        else:
            q, qpos = view.queries, view.query_positions
        probs = view.attention(q)                                   # (H_q, R, T)
        if int(qpos.min()) < int(view.positions.max()):             # context window queries: stay causal
            probs = probs.masked_fill(view.positions.repeat_interleave(view.model.group_size, 0)[:, None, :]
                                      > qpos[None, :, None], 0.0)
        probs = view.group(probs, "mean")                           # (H_kv, R, T)
        out = []
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            a = probs[h, :, :n]                                     # (R, n)
            chosen = torch.zeros(n, dtype=torch.bool, device=a.device)
            chosen[: min(self.sinks, n)] = True
            cover = a[:, chosen].sum(dim=1)                         # (R,)
            left = view.budget - int(chosen.sum())
            while left > 0:
                gain = (torch.sqrt(cover[:, None] + a) - torch.sqrt(cover[:, None])).sum(dim=0)
                gain = gain.masked_fill(chosen, -1.0)
                m = max(1, min(left, left // self.batch_div))
                new = gain.topk(m).indices
                chosen[new] = True
                cover = cover + a[:, new].sum(dim=1)
                left -= m
            out.append(chosen.nonzero().flatten())
        return Keep(tuple(out))
