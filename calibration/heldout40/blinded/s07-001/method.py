"""Both Ways: keep the tokens the context's re-reading needs both strongly and often.

On board B_offline the harness lets the model re-read the context once (KVzip's reconstruction pass). KVzip keeps
the tokens with the largest single attention any re-reading query pays them; H2O-style sums favour tokens that
are read a little by many queries. Each alone has a failure: a lone spike, or a broad but shallow hum. Here a
token is ranked within its head by both (max and sum over the re-reading queries, each taken per query head and
then maxed over a KV head's group), each rank turned into a percentile, and the token's score is the smaller of
its two percentiles: it must do well both ways. Ties go to the larger sum. Builds on KVzip and H2O.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _percentile(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    x = x.masked_fill(~valid, float("-inf"))
    ranks = x.argsort(dim=1).argsort(dim=1).float()
    n_pad = (~valid).sum(dim=1, keepdim=True).float()
    n_real = valid.sum(dim=1, keepdim=True).float()
    return ((ranks - n_pad) / (n_real - 1).clamp_min(1)).clamp(0, 1)


class BothWays(EvictionMethod):
    name = "both_ways"
    reconstruction_queries = True

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        peak = view.group(view.attention(reduce="max"), "max")
        total = view.group(view.attention(reduce="sum"), "max")
        both = torch.minimum(_percentile(peak, valid), _percentile(total, valid))
        tie = _percentile(total, valid) * 1e-3
        return Keep.from_topk(both + tie, view.budget, view.valid)
