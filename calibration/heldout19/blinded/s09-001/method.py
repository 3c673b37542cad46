"""Attention-first, norm-second fill (board B_online).

Most of the budget (70 %) goes to the tokens the context's own closing rows attend to (SnapKV-style window attention,
max-pooled); the rest is filled with the lowest-key-norm tokens among those left (the K-norm signal), which tends to
pick up content the window did not look at. The window itself is kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class AttentionThenNorm(EvictionMethod):
    name = "attention_then_norm"
    query_window = 32
    attention_share = 0.7
    kernel = 5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention(reduce="mean"), "mean")
        att = F.max_pool1d(att[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        att = att.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        knorm = view.keys.float().norm(dim=-1)
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            a = att[h].masked_fill(~valid[h], float("-inf"))
            n = int(valid[h].sum())
            b = min(view.budget, n)
            first = a.topk(max(1, int(round(b * self.attention_share))) if b else 0).indices
            rest = (-knorm[h]).masked_fill(~valid[h], float("-inf"))
            rest[first] = float("-inf")
            second = rest.topk(b - first.numel()).indices
            out.append(torch.cat([first, second]).sort().values)
        return Keep(tuple(out))
