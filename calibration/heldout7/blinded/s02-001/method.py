"""Attention plus value surprise (board B_online).

Query-agnostic eviction: each context token gets two signals, (1) the attention the closing context queries pay it
(SnapKV's observation window, arXiv 2404.14469, used unchanged: causal softmax of the last 32 context queries,
summed over the window, averaged over the KV head's query heads) and (2) how poorly its value vector is predicted by
the average of its two neighbours' values (a token whose value breaks the local pattern carries information the
neighbours cannot stand in for). The two signals are turned into ranks in [0, 1] per head and added, the second with
weight 0.5. The first 4 tokens (attention sinks, as in StreamingLLM, arXiv 2309.17453) and the observation window
are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _unit_rank(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Per row, the rank of every entry among the row's valid entries, scaled to [0, 1] (padding gets 0)."""
    x = x.masked_fill(~valid, float("-inf"))
    order = x.argsort(dim=-1)
    ranks = torch.empty_like(x)
    ranks.scatter_(-1, order, torch.arange(x.shape[-1], device=x.device, dtype=x.dtype).expand_as(x))
    n_pad = (~valid).sum(dim=-1, keepdim=True).to(x.dtype)
    n_real = valid.sum(dim=-1, keepdim=True).to(x.dtype)
    return ((ranks - n_pad) / (n_real - 1).clamp_min(1)).clamp_min(0).masked_fill(~valid, 0.0)


def value_surprise(values: torch.Tensor) -> torch.Tensor:
    """(H_kv, T, D) -> (H_kv, T): || v_i - (v_{i-1} + v_{i+1}) / 2 || / ||v_i||; the two ends use their one
    neighbour."""
    v = values.float()
    left = torch.cat([v[:, :1], v[:, :-1]], dim=1)
    right = torch.cat([v[:, 1:], v[:, -1:]], dim=1)
    predicted = 0.5 * (left + right)
    return (v - predicted).norm(dim=-1) / v.norm(dim=-1).clamp_min(1e-6)


class AttentionValueSurprise(EvictionMethod):
    name = "attention_value_surprise"
    query_window = 32
    n_sink = 4
    surprise_weight = 0.5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        attn = view.group(view.attention(reduce="sum"), "mean")              # (H_kv, T)
        score = _unit_rank(attn, valid) + self.surprise_weight * _unit_rank(value_surprise(view.values), valid)
        protect = (view.positions < self.n_sink) | (view.positions >= int(view.query_positions.min()))
        return Keep.from_topk(score.masked_fill(protect, float("inf")), view.budget, view.valid)
