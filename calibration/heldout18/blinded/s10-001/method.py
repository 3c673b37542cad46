"""Head-ballot selection (board A).

Every query head of the question rows casts a ballot over the context: its own softmax over the context, summed over
the rows. Ballots are added across the whole layer (all query heads), so a token wins when many heads, not just its
own group, point at it. Sinks and the newest rows are held aside.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class HeadBallot(EvictionMethod):
    name = "head_ballot"
    query_window = 32
    question_queries = True
    held_sinks = 4
    held_recent = 32
    fast_path_fraction = 0.03  # below this share of the context, skip the ballot

    def _held(self, view: LayerView) -> torch.Tensor:
        newest = view.positions.masked_fill(~view.valid_mask(), -1).amax(dim=-1, keepdim=True)
        return (view.positions < self.held_sinks) | (view.positions > newest - self.held_recent)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.budget < self.fast_path_fraction * view.n_tokens:
            # tight budgets: the held tokens fill most of it anyway
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        probs = view.attention()  # (H_q, N, T), each row a soft ballot
        ballots = probs.sum(dim=1)  # per query head
        layer_vote = ballots.sum(dim=0, keepdim=True).expand(view.n_kv_heads, -1)
        own_vote = view.group(ballots, "sum")
        score = layer_vote + 0.25 * own_vote
        score = score.masked_fill(self._held(view), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
