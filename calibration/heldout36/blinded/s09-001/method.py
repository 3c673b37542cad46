"""Forward Bracket: keep each place the question lands on, and the few tokens right after it.

In a retrieval prompt the question attends to the key phrase ("the number for X is"), but the answer sits
just after it. Each question attention peak (per KV head, in score order) claims itself and the next
`reach` tokens; brackets are taken until the budget is spent.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ForwardBracket(EvictionMethod):
    name = "forward_bracket"
    query_window = 8
    question_queries = True
    reach = 6
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention(reduce="mean"), "mean")
        n = view.n_tokens
        qmin = view.query_positions.min()
        out = []
        for h in range(view.n_kv_heads):
            fixed = ((view.positions[h] < self.sinks) | (view.positions[h] >= qmin)).nonzero().squeeze(-1)
            taken = torch.zeros(n, dtype=torch.bool)
            taken[fixed[: view.budget]] = True
            left = view.budget - int(taken.sum())
            for p in att[h].argsort(descending=True).tolist():
                if left <= 0:
                    break
                span = torch.arange(p, min(n, p + 1 + self.reach))
                new = span[~taken[span]][:left]
                taken[new] = True
                left -= new.numel()
            out.append(taken.nonzero().squeeze(-1))
        return Keep(tuple(out))
