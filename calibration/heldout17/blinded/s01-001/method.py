"""Quiet-vote retention (board C, decode-time eviction).

A token that has stopped mattering tends to stay that way. Rather than ranking tokens by how much attention they get,
we count how often they are ignored: every one of the newest 40 queries, in every query head, casts a "quiet" vote
for each visible token it pays less than an even share (1 / number of visible tokens). A token's quiet count is the
sum of those votes over the rows and the KV head's query heads. When the layer is full we keep the tokens with the
fewest quiet votes; ties go to the one with more attention overall. The 4 opening tokens and the newest 24 are
always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _horizon(view: LayerView) -> torch.Tensor:
    """(H_q, N, T) bool: which cache entries each query row can see (causal, real entries only)."""
    g = view.model.group_size
    pos = view.positions.repeat_interleave(g, dim=0)[:, None, :]
    real = view.valid_mask().repeat_interleave(g, dim=0)[:, None, :]
    return (pos <= view.query_positions[None, :, None]) & real


class QuietVote(EvictionMethod):
    name = "quiet_vote"
    query_window = 40
    head_tokens = 4
    tail_tokens = 24

    def _protected(self, view: LayerView) -> torch.Tensor:
        newest = view.positions.masked_fill(~view.valid_mask(), -1).amax(dim=-1, keepdim=True)
        return (view.positions < self.head_tokens) | (view.positions > newest - self.tail_tokens)

    def on_decode(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention().float()  # (H_q, N, T)
        sees = _horizon(view)
        even_share = 1.0 / sees.sum(dim=-1, keepdim=True).clamp_min(1).float()
        quiet = ((attn < even_share) & sees).float().sum(dim=1)  # (H_q, T)
        quiet = view.group(quiet, "sum")
        weight = view.group(attn.sum(dim=1), "sum")
        weight = weight / weight.amax(dim=-1, keepdim=True).clamp_min(1e-9)
        ranking = -quiet + 0.5 * weight
        ranking = ranking.masked_fill(self._protected(view), float("inf"))
        return Keep.from_topk(ranking, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        return self.on_decode(view)
