"""Clause-granular retention (board A, question-aware prefill).

A fact in the context is rarely one token: it is a clause, a line, a record. Keeping the highest-scoring
tokens one by one leaves ragged fragments of many clauses. This method first finds where the context's
clauses begin (dips in the similarity of neighbouring keys) and then decides clause by clause: a clause is
either kept whole or dropped. Whatever budget is left when no further clause fits goes to single tokens.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _boundaries(k: torch.Tensor, min_len: int, max_len: int) -> list[tuple[int, int]]:
    """Split one head's keys (T, D) into clauses at local dips of neighbour cosine similarity."""
    t = k.shape[0]
    if t <= min_len:
        return [(0, t)]
    unit = F.normalize(k.float(), dim=-1)
    sim = (unit[1:] * unit[:-1]).sum(-1)                      # similarity of token i+1 to token i
    cut_level = torch.quantile(sim, 0.2)
    spans, start = [], 0
    for i in range(1, t):
        here = i - start
        dip = bool(sim[i - 1] < cut_level) and (i == t - 1 or bool(sim[i - 1] <= sim[min(i, t - 2)]))
        if (dip and here >= min_len) or here >= max_len:
            spans.append((start, i))
            start = i
    spans.append((start, t))
    return spans


class ClauseRetention(EvictionMethod):
    name = "clause_retention"
    query_window = 24
    question_queries = True
    shortest = 6
    longest = 48

    def _token_relevance(self, view: LayerView) -> torch.Tensor:
        per_q = view.attention(reduce="sum")                  # (H_q, T)
        return view.group(per_q, "sum")                       # (H_kv, T)

    def select(self, view: LayerView) -> Keep:
        t, budget = view.n_tokens, view.budget
        if view.queries is None or budget >= t:
            return Keep.from_topk(view.positions.float(), budget, view.valid)
        rel = self._token_relevance(view)
        valid = view.valid_mask()
        qstart = int(view.query_positions.min()) if view.query_positions is not None else t
        picks = []
        for h in range(view.n_kv_heads):
            live = valid[h].nonzero().flatten()
            k_h = view.keys[h, live]
            r_h = rel[h, live].clone()
            pos_h = view.positions[h, live]
            chosen = torch.zeros(live.numel(), dtype=torch.bool)
            # the question itself is the reader's prompt: it stays
            chosen |= (pos_h >= qstart).cpu()
            left = budget - int(chosen.sum())
            if left < 0:
                order = torch.argsort(pos_h.cpu(), descending=True)[:budget]
                chosen = torch.zeros_like(chosen)
                chosen[order] = True
                left = 0
            spans = _boundaries(k_h, self.shortest, self.longest)
            worth = [(float(r_h[a:b].mean()), a, b) for a, b in spans if not bool(chosen[a:b].any())]
            for _, a, b in sorted(worth, reverse=True):
                if b - a <= left:
                    chosen[a:b] = True
                    left -= b - a
            if left > 0:
                rest = r_h.cpu().masked_fill(chosen, float("-inf"))
                extra = rest.topk(min(left, int((~chosen).sum()))).indices
                chosen[extra] = True
            picks.append(live[chosen.nonzero().flatten().to(live.device)].sort().values)
        return Keep(tuple(picks))
