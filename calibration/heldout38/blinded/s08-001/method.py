"""Rank Fusion: two cheap, imperfect signals of a token's worth, merged by their ranks rather than their values.

Signal one is the question's attention to the token (as in SnapKV, Li et al., 2024, with the question as the
observation window); signal two is a low key norm (K-norm, Devoto et al., 2024: keys with small L2 norm tend
to draw attention). Their scales have nothing in common, so we fuse their rankings with reciprocal-rank fusion
(Cormack et al., 2009): score = 1/(c + rank_attention) + 1/(c + rank_norm). The first tokens (StreamingLLM's
sinks, Xiao et al., 2023) and the final tokens are kept outright.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _ranks(x: torch.Tensor) -> torch.Tensor:
    """Per row, the rank of each entry when sorted in descending order (0 = largest)."""
    order = x.argsort(dim=-1, descending=True)
    r = torch.empty_like(order)
    r.scatter_(-1, order, torch.arange(x.shape[-1], device=x.device).expand_as(order))
    return r.float()


class RankFusion(EvictionMethod):
    name = "rank_fusion"
    question_queries = True
    c = 60.0
    sinks = 4
    tail = 16

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        low_norm = -view.keys.float().norm(dim=-1)
        if view.queries is not None:
            att = view.group(view.attention(reduce="sum"), "mean")
        else:
            att = low_norm
        att = att.masked_fill(~valid, -float("inf"))
        low_norm = low_norm.masked_fill(~valid, -float("inf"))
        score = 1.0 / (self.c + _ranks(att)) + 1.0 / (self.c + _ranks(low_norm))
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, :min(self.sinks, n)] = float("inf")
            score[h, max(0, n - self.tail):n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
