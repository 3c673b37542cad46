"""A DBudgetKV-style halting rule on board A (port of DBudgetKV: Ni, Xu, Lyu, Wang, Yu, Liu, Meng, Zhou, Li, 2025,
"DBudgetKV: Dynamic Budget in KV Cache Compression for Ensuring Optimal Performance", arXiv 2502.16886).

DBudgetKV prunes a layer's cache token by token, least important first, and *halts* as soon as an attention-based
metric says the reduced cache is unlikely to match the full one, so the kept size adapts to the input instead of
being fixed. Our port on the harness interface:

* importance: the causal softmax attention of the question span and the last 16 prompt queries, summed over the
  queries and averaged over the KV head's query heads (SnapKV-style, arXiv 2404.14469); the question span and the
  first 4 tokens (StreamingLLM, arXiv 2309.17453) are never pruned;
* halting metric (our reading of the paper's norm criterion): the share of the squared Frobenius norm of that attention
  matrix carried by the kept columns; pruning stops when dropping the next token would take the share below
  ``1 - tolerance`` (tolerance 1 %).

Deviations, stated: the board's budget is a hard cap, so a layer keeps min(halting size, budget) tokens (the paper has
no cap); the paper's ranking also folds in token position, ours ranks by attention only; the rule is applied per KV
head rather than to the layer as a whole. Where the protected tokens alone exceed the budget (2 % of a short context),
the latest of them are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class DBudgetHalting(EvictionMethod):
    name = "dbudget_halting"
    query_window = 16
    question_queries = True
    tolerance = 0.01
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                                    # (H_q, N, T)
        h_kv, t = view.keys.shape[:2]
        grouped = attn.reshape(h_kv, -1, t)                        # every (query head, query) row of the group
        importance = grouped.sum(1) / view.model.group_size
        energy = grouped.pow(2).sum(1)                             # per-column squared Frobenius mass
        protect = (view.positions < self.n_sink) | (view.positions >= int(view.query_positions.min()))
        valid = view.valid_mask()
        out = []
        for h in range(h_kv):
            real = torch.nonzero(valid[h]).flatten()
            must = real[protect[h, real]]
            free = real[~protect[h, real]]
            order = free[importance[h, free].argsort(descending=True)]
            total = energy[h, real].sum().clamp_min(1e-12)
            kept_mass = energy[h, must].sum() + torch.cumsum(energy[h, order], 0)
            enough = torch.nonzero(kept_mass / total >= 1 - self.tolerance).flatten()
            need = int(enough[0]) + 1 if enough.numel() else order.numel()
            room = max(0, view.budget - must.numel())
            chosen = order[: min(need, room)]
            idx = torch.cat([must, chosen]).sort().values
            out.append(idx[-view.budget:] if idx.numel() > view.budget else idx)  # budget below the protected set
        return Keep(tuple(out))
