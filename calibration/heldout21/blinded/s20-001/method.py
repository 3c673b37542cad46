"""Spread-proportional head budgets (board A, question-aware prefill).

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for selection inside a head and on Ada-KV (Feng et al., 2024,
arXiv 2407.11550) for the idea that KV heads of a layer should not get equal budgets. Ada-KV shares the layer's budget
by where each head's top attention weights fall; here a head's share follows how spread out its question attention
is: the perplexity (exp of the Shannon entropy) of its attention distribution. A head that looks at a few tokens needs
few slots; a head that spreads its attention over many needs more. Each head keeps at least half of the mean budget.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SpreadProportionalBudgets(EvictionMethod):
    name = "spread_budgets"
    query_window = 32
    question_queries = True
    floor = 0.5
    kernel = 7
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention(reduce="sum"), "mean")                 # (H_kv, T)
        p = att / att.sum(-1, keepdim=True).clamp_min(1e-12)
        entropy = -(p * p.clamp_min(1e-12).log()).sum(-1)
        spread = entropy.exp()                                                  # effective number of tokens
        h_kv = view.n_kv_heads
        total = view.budget * h_kv
        base = int(view.budget * self.floor)
        extra = total - base * h_kv
        k = base + (spread / spread.sum() * extra).floor().long()
        k = k.clamp(max=view.n_tokens)
        score = F.max_pool1d(att[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, k, view.valid)
