"""Value-Weighted Window: window attention weighted by each token's value norm."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class ValueWeightedWindow(EvictionMethod):
    name = "value_weighted_window"
    query_window = 32
    question_queries = True
    kernel = 7

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h_kv, g, t = view.n_kv_heads, view.model.group_size, view.n_tokens
        attn = view.attention().reshape(h_kv, g, -1, t)           # (H_kv, G, N, T)
        vnorm = view.values.float().abs().sum(dim=-1)              # (H_kv, T): L1 norm of each value
        # a_{h,g,n,t} * |v_{h,t}|_1, summed over queries and the group's heads, in one contraction
        contrib = torch.einsum("hgnt,ht->ht", attn, vnorm) / g
        contrib = F.max_pool1d(contrib[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        return Keep.from_topk(contrib, view.budget, view.valid)
