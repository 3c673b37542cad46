"""Recent Company: a fixed-size cache for long answers. The newest tokens stay; of the older ones, those the
newest tokens themselves are reading stay with them."""

import torch

from harness import EvictionMethod, Keep, LayerView


class RecentCompany(EvictionMethod):
    name = "recent_company"
    query_window = 16      # the queries of the newest tokens
    company = 16           # newest tokens always kept

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        probs = view.attention()                                  # (H_q, W, T)
        interest = view.group(probs.sum(dim=1), "max")            # (H_kv, T)
        newest = view.query_positions.min().to(view.positions.device)
        interest = interest.masked_fill(view.positions >= newest, float("inf"))
        valid = view.valid_mask()
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            interest[h, max(0, c - self.company): c] = float("inf")
        return Keep.from_topk(interest, view.budget, view.valid)
