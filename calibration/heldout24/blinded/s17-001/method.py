"""Left-bridged question attention (board A, question-aware prefill).

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469): the question rows' attention, averaged over each KV head's
query heads and max-pooled, ranks the context. The change is where part of the budget goes. In retrieval-style
prompts the token the question lands on is usually the value, and what identifies it (its key phrase) sits just
to its left; pooling symmetrically spends half its reach on the right, where the next record begins. Here a
fifth of the budget is set aside for bridges: the left neighbours (one and two to the left) of the
highest-ranked tokens, in rank order, when they are not already kept. The question span is kept.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class LeftBridged(EvictionMethod):
    name = "left_bridged"
    query_window = 8
    question_queries = True
    bridge_share = 0.2
    kernel = 5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention(reduce="sum"), "mean")
        att = F.max_pool1d(att[:, None], self.kernel, 1, self.kernel // 2)[:, 0]
        att = att.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        ok = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            s = att[h].masked_fill(~ok[h], float("-inf"))
            b = min(view.budget, int(ok[h].sum()))
            bridges = int(self.bridge_share * b)
            core = s.topk(b - bridges).indices
            kept = torch.zeros_like(s, dtype=torch.bool)
            kept[core] = True
            room = bridges
            for i in core.tolist():
                if room == 0:
                    break
                for j in (i - 1, i - 2):
                    if room and j >= 0 and ok[h, j] and not kept[j]:
                        kept[j] = True
                        room -= 1
            if room:
                kept[s.masked_fill(kept, float("-inf")).topk(room).indices] = True
            out.append(kept.nonzero().flatten())
        return Keep(tuple(out))
