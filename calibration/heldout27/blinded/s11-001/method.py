"""Two-witness agreement (board B_online): keep what both halves of the closing window attend to.

Without the question, SnapKV-style methods rate the context by the attention of its own closing rows. Those rows
are a small, correlated sample, and a token one row happens to stare at gets kept even if the rows around it do
not care. Here the closing ``query_window`` rows are split into an older and a newer half, two witnesses; each
half's attention (summed over its rows, averaged over the query heads of the KV head, outside the window itself)
is normalised to a distribution, and a token's score is the smaller of its two shares: it must be wanted by both
witnesses. Scores are max-pooled over 5 tokens; the first ``n_sink`` tokens and the newest ``keep_new`` tokens
are always kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) and its question-free use on board B (as evaluated in KVzip,
Kim et al., 2025, arXiv 2505.23416), and on StreamingLLM (Xiao et al., 2023, arXiv 2309.17453) for the sinks.
DefensiveKV (Feng et al., 2025, arXiv 2510.13334) aggregates window rows pessimistically about the risk of
dropping a token (a maximum); this takes the opposite stance, a minimum over two disjoint halves, as a
consistency test. We are not aware of this split-half agreement score elsewhere.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class TwoWitnesses(EvictionMethod):
    name = "two_witnesses"
    query_window = 64
    n_sink = 4
    keep_new = 16
    kernel = 5

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.budget >= t or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        n = view.queries.shape[1]
        if n < 2:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        cut = n // 2
        window = view.positions >= view.query_positions.min()
        attn = view.attention()  # (H_q, N, T), causal over the window's own rows
        halves = []
        for part in (attn[:, :cut].sum(dim=1), attn[:, cut:].sum(dim=1)):
            share = view.group(part, "mean").masked_fill(window, 0.0)
            halves.append(share / share.sum(dim=1, keepdim=True).clamp_min(1e-12))
        agree = torch.minimum(halves[0], halves[1])
        agree = F.max_pool1d(agree[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        agree[:, : self.n_sink] = float("inf")
        keep_new = min(self.keep_new, max(1, view.budget // 4))
        for i in range(view.n_kv_heads):
            c = int(counts[i])
            agree[i, max(0, c - keep_new): c] = float("inf")
        return Keep.from_topk(agree, view.budget, view.valid)
