"""Turn Taking: the query heads that share a KV head take turns choosing tokens.

Averaging the query heads of a GQA group lets one loud head decide for all; a quiet head that reads
something different loses everything. Here each query head ranks tokens by its own question attention,
and the group's budget is filled in rounds: every head in turn adds its best token not yet chosen.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class TurnTaking(EvictionMethod):
    name = "turn_taking"
    query_window = 8
    question_queries = True
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        per_q = view.attention(reduce="sum")  # (H_q, T)
        g = view.model.group_size
        qmin = view.query_positions.min()
        out = []
        for h in range(view.n_kv_heads):
            chosen = torch.zeros(view.n_tokens, dtype=torch.bool)
            fixed = ((view.positions[h] < self.sinks) | (view.positions[h] >= qmin)).nonzero().squeeze(-1)
            chosen[fixed[: view.budget]] = True
            lists = [per_q[h * g + j].argsort(descending=True) for j in range(g)]
            ptr = [0] * g
            need = view.budget - int(chosen.sum())
            while need > 0:
                moved = False
                for j in range(g):
                    while ptr[j] < view.n_tokens and bool(chosen[lists[j][ptr[j]]]):
                        ptr[j] += 1
                    if ptr[j] < view.n_tokens and need > 0:
                        chosen[lists[j][ptr[j]]] = True
                        need -= 1
                        moved = True
                if not moved:
                    break
            out.append(chosen.nonzero().squeeze(-1))
        return Keep(tuple(out))
