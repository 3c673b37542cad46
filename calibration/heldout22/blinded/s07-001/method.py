"""Nested-window agreement (board B_online, query-agnostic prefill).

Builds on query-agnostic SnapKV (SnapKV, Li et al., 2024, arXiv 2404.14469, as evaluated without the question in
KVzip, arXiv 2505.23416): score the context by what its own closing rows attend to. Which closing window to use is a
guess: the last 8 rows see only the immediate neighbourhood, the last 128 blur it. Here three nested windows (8, 32
and 128 rows) each give a pooled score (group mean, max-pool 7), each is turned into within-head percentiles, and
a token's score is their geometric mean, so a token must look useful at every reach to rank high. The last 32
rows and the first four tokens are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class NestedWindows(EvictionMethod):
    name = "nested_windows"
    query_window = 128
    reaches = (8, 32, 128)
    keep_rows = 32

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        ok = view.valid_mask()
        n = ok.sum(1, keepdim=True).clamp_min(1)
        log_pct = torch.zeros(ok.shape, device=view.keys.device)
        full = view.attention()                                   # (H_q, N, T), causal over the closing rows
        for r in self.reaches:
            r = min(r, full.shape[1])
            a = view.group(full[:, -r:].sum(1), "mean")
            a = F.max_pool1d(a[:, None], 7, stride=1, padding=3)[:, 0].masked_fill(~ok, -1.0)
            pct = (a.argsort(1).argsort(1).float() + 1) / n
            log_pct += pct.clamp_min(1e-6).log()
        score = log_pct / len(self.reaches)
        qpos = view.query_positions
        start = qpos[-min(self.keep_rows, qpos.numel())]
        score = score.masked_fill(view.positions >= start, float("inf"))
        score[:, :4] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)

