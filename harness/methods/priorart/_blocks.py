"""Shared by the block and page methods: rank whole blocks first, tokens inside a block after."""

import torch


def whole_blocks_first(block_scores: torch.Tensor, token_scores: torch.Tensor, size: int) -> torch.Tensor:
    """(H, T) ranking scores: blocks of ``size`` by ``block_scores`` (H, nb), whole; ties inside by tokens."""
    nb, t = block_scores.shape[1], token_scores.shape[1]
    order = block_scores.argsort(dim=1, descending=True, stable=True)
    rank = torch.empty_like(order).scatter_(1, order, torch.arange(nb, device=order.device).expand_as(order))
    inner = token_scores.argsort(dim=1, stable=True).argsort(dim=1).double() / (t + 1)
    return inner - rank.repeat_interleave(size, dim=1)[:, :t].double()
