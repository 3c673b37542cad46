"""Consensus mixture retention (board A): per head, the question's queries are summarised into a few
directions and each context token is scored by how strongly the most interested direction picks it; the heads of a
layer then add a shared consensus term so that a token one head misses but the layer agrees on survives."""

import torch

from harness import EvictionMethod, Keep, LayerView


class ConsensusMixtureRetention(EvictionMethod):
    name = "consensus_mixture_retention"
    query_window = 48
    question_queries = True
    consensus_weight = 1.0
    n_anchor = 4
    use_value_scale = True

    def _peak_interest(self, view: LayerView) -> torch.Tensor:
        """(H_kv, T): for every query head the strongest causal attention any question query pays a token, then
        the mean over the KV head's query heads."""
        peak = view.attention(reduce="max")                                   # (H_q, T)
        return view.group(peak, "mean")

    def _with_consensus(self, per_head: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        per_head = per_head.masked_fill(~valid, 0.0)
        shared = per_head.sum(dim=0, keepdim=True) / valid.sum(dim=0, keepdim=True).clamp_min(1)
        return per_head + self.consensus_weight * shared

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        score = self._with_consensus(self._peak_interest(view), valid)
        if self.use_value_scale:
            score = score * view.values.float().norm(dim=-1)
        pinned = (view.positions >= int(view.query_positions.min())) | (view.positions < self.n_anchor)
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
