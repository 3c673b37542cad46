"""Odd Values: a query-agnostic window score with a small reserve for entries whose values stand apart.

Attention-based scores judge an entry by how much it is read, never by what reading it returns. An entry whose value
vector sits far from the head's typical value changes the attention output a lot whenever it is read at all, and a
query-agnostic score (which never sees the question) can easily underrate it. Here ``reserve`` of the free budget
goes to the entries whose values are farthest from the head's median value (distance divided by the median
distance, so the scale is per head); the rest goes to SnapKV's query-agnostic window score (closing rows' attention,
summed, averaged over the KV head's query heads, max-pooled over 7). The closing rows and the first four entries are
kept.
Builds on SnapKV (window scoring), VATP (value norms matter for importance), KeyDiff (keeping entries that differ
from the typical one, there for keys) and StreamingLLM (sinks).
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class OddValues(EvictionMethod):
    name = "odd_values"
    query_window = 32
    reserve = 0.1
    kernel = 7
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        window = view.group(view.attention(reduce="sum"), "mean")
        window = F.max_pool1d(window[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        pinned = ((view.positions < self.n_sink) | (view.positions >= view.query_positions.min())) & valid
        out = []
        for h in range(view.n_kv_heads):
            live = torch.nonzero(valid[h]).flatten()
            vals = view.values[h, live].float()
            centre = vals.median(dim=0).values
            far = (vals - centre).norm(dim=-1)
            far = far / far.median().clamp_min(1e-6)
            chosen = pinned[h].clone()
            if int(chosen.sum()) > view.budget:
                idx = torch.nonzero(chosen).flatten()[-view.budget:]
                out.append(idx)
                continue
            room = view.budget - int(chosen.sum())
            odd = torch.full((view.n_tokens,), float("-inf"))
            odd[live] = far
            odd = odd.masked_fill(chosen, float("-inf"))
            n_odd = min(int(room * self.reserve), int((odd > float("-inf")).sum()))
            if n_odd:
                chosen[odd.topk(n_odd).indices] = True
            rest = window[h].masked_fill(chosen | ~valid[h], float("-inf"))
            n_rest = min(view.budget - int(chosen.sum()), int((rest > float("-inf")).sum()))
            if n_rest > 0:
                chosen[rest.topk(n_rest).indices] = True
            out.append(torch.nonzero(chosen).flatten())
        return Keep(tuple(out))
