"""Read-out contribution eviction for reasoning traces (board C).

During a long generation the question is what the *current* step takes from each cached entry. The read-out of
a query head is a sum of per-entry contributions a_i * v_i; the size of an entry's contribution (its attention
weight times the L1 mass of its value) is exactly what the read-out loses if the entry goes. We score entries by
that contribution for the newest query, averaged over all query heads and channels of the layer, and keep the
same set for every KV head of the layer (the layer keeps one shared slot table, so heads never drift apart).
Nothing else is stored between calls: no accumulated history, no per-token counters.

When the prompt alone is over the cap, the prompt is first cut the usual way: the closing 32 prompt rows' summed
attention (over rows and all heads), average-pooled over 5 neighbours, with those 32 rows kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class ContributionEvict(EvictionMethod):
    name = "contribution_evict"
    query_window = 32

    def _prompt_cut(self, view: LayerView) -> Keep:
        n = view.n_tokens
        w = min(view.queries.shape[1], view.budget)
        att = view.attention(reduce="sum")  # (H_q, T): the closing rows
        s = att.sum(0)  # over rows and every head: one table for the layer
        s = F.avg_pool1d(s[None, None], 5, stride=1, padding=2, count_include_pad=False)[0, 0]
        s = s.clone()
        s[n - w:] = float("inf")
        idx = s.topk(view.budget).indices.sort().values
        return Keep.same_for_all_heads(idx, view.n_kv_heads)

    def on_decode(self, view: LayerView) -> Keep:
        if view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        a = view.attention(view.queries[:, -1:])[:, 0]  # (H_q, T): the newest query only
        l1 = view.values.float().abs().sum(-1)  # (H_kv, T)
        contrib = a * l1.repeat_interleave(view.model.group_size, dim=0)
        table = contrib.sum(0) / (a.shape[0] * view.values.shape[-1])
        idx = table.topk(min(view.budget, view.n_tokens)).indices.sort().values
        return Keep.same_for_all_heads(idx, view.n_kv_heads)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.phase == "decode":
            return self.on_decode(view)
        return self._prompt_cut(view)
