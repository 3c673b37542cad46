"""Entropy-budgeted value-aware retention (board A)."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _pad_to(x: torch.Tensor, dim: int, mult: int) -> torch.Tensor:
    extra = (-x.shape[dim]) % mult
    if extra == 0:
        return x
    shape = list(x.shape)
    shape[dim] = extra
    return torch.cat([x, x.new_zeros(shape)], dim=dim)


class EntropyBudgetedRetention(EvictionMethod):
    name = "entropy_budgeted"
    question_queries = True
    query_window = 16
    stride = 8

    def _profile(self, view: LayerView) -> torch.Tensor:
        """Per KV head and key block: the probe mass of the block."""
        s = self.stride
        probs = view.attention()                              # (H_q, N, T)
        probs = _pad_to(_pad_to(probs, 1, s), 2, s)
        hq, n, t = probs.shape
        i = torch.arange(s, device=probs.device)
        diag = ((i[:, None] + i[None, :]) == (s - 1)).float()  # one anti-diagonal per s x s tile
        tiles = probs.view(hq, n // s, s, t // s, s)
        mass = torch.einsum("hasbt,st->hb", tiles, diag)      # (H_q, T / s)
        return view.group(mass, "sum")

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.queries is None or view.budget >= n:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = self.stride
        blocks = self._profile(view)                          # (H_kv, nb)
        per_token = blocks.repeat_interleave(s, dim=1)[:, :n].clone()
        per_token += 1e-6 * view.positions.float() / max(1, n)   # inside a block, later first
        protect = view.positions >= int(view.query_positions.min())
        per_token = per_token.masked_fill(protect, float("inf"))
        return Keep.from_topk(per_token, view.budget, view.valid)
