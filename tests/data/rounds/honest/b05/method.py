"""Attention above chance (board B_online, query-agnostic prefill).

A query at position p that spreads its weight evenly would give each of the p + 1 keys it can see 1 / (p + 1).
Summed raw attention therefore favours early tokens a little merely because every window row can see them and the
rows' mass is shared among fewer keys early on. We score each token by the attention it receives above that
uniform prior, clipped at zero per row, summed over the closing 32 context rows, mean over the KV head's query
heads, max-pooled over 3. Tokens with no excess at all are ordered by recency (a tiny positional term). The window
itself is kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469), query-agnostic. Subtracting the uniform expectation per row is
our change, and a small one.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def excess_over_uniform(attn: torch.Tensor, key_pos: torch.Tensor, q_pos: torch.Tensor, group: int,
                        valid: torch.Tensor) -> torch.Tensor:
    """attn (H_q, N, T) causal; key_pos, valid (H_kv, T); q_pos (N,). Returns (H_q, T): sum over rows of
    relu(a - 1/n_vis), n_vis the real keys the row can see."""
    seen = (key_pos[:, None, :] <= q_pos[None, :, None]) & valid[:, None, :]
    visible = seen.repeat_interleave(group, dim=0)  # (H_q, N, T)
    n_vis = visible.sum(dim=-1, keepdim=True).clamp_min(1).float()
    excess = (attn - visible.float() / n_vis).clamp_min(0.0)
    return excess.sum(dim=1)


class AboveChance(EvictionMethod):
    name = "above_chance"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        ex = excess_over_uniform(view.attention(), view.positions, view.query_positions, g, view.valid_mask())
        score = view.group(ex, "mean")
        score = F.max_pool1d(score[:, None], 3, stride=1, padding=1)[:, 0]
        span = float(view.positions.max()) + 1.0
        score = score + 1e-9 * view.positions.float() / span  # recency breaks exact ties
        score[view.positions >= view.query_positions.min()] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
