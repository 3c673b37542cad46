"""Spread-proportional head budgets (board B_online, query-agnostic prefill).

Ada-KV showed that KV heads should not all get the same budget. Its rule hands the layer's budget to whichever
head's top scores are largest. This method uses a different, simpler rule: a head's share of the layer's budget is
proportional to the square root of its attention's *effective support* (exp of the entropy of its window attention,
i.e. how many tokens it really spreads over), clipped to [budget/4, 3 x budget]. Diffuse heads get more, sharply
focused heads less. Inside each head: SnapKV's window score (last 32 rows, max-pooled 7), window kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SpreadProportionalBudgets(EvictionMethod):
    name = "spread_budgets"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        att = view.group(view.attention(reduce="mean"), "mean")            # (H_kv, T)
        T = att.shape[1]
        p = att / att.sum(dim=1, keepdim=True).clamp_min(1e-9)
        entropy = -(p * p.clamp_min(1e-12).log()).sum(dim=1)
        support = entropy.exp()                                              # (H_kv,)
        weight = support.sqrt()
        total = view.budget * view.n_kv_heads
        share = weight / weight.sum() * total
        share = share.clamp(min=max(1, view.budget // 4), max=min(T, 3 * view.budget)).floor().long()
        # hand back any overspend (clipping can push the sum above the layer total) from the largest shares
        while int(share.sum()) > total:
            share[share.argmax()] -= 1

        score = F.max_pool1d(att[:, None], 7, stride=1, padding=3)[:, 0]
        score = score.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        return Keep.from_topk(score, share, view.valid)
