"""Binary-code retention: each key is stored as a short code plus its length; the closing queries are scored
against the codes and the best-scored tokens stay, with the first few."""

import math

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _codebook(dim: int, width: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(dim, width, generator=gen)


def _estimate(qs: torch.Tensor, bits: torch.Tensor, lengths: torch.Tensor, width: int) -> torch.Tensor:
    # (Nq, m) x (T, m) -> (Nq, T): the queries' codes are left as they are
    raw = torch.einsum("nm,tm->nt", qs, bits)
    return raw * lengths[None, :] * (math.sqrt(math.pi / 2.0) / width)


class BinaryCodeRetention(EvictionMethod):
    name = "binary_code_retention"
    query_window = 48
    code_width = 192
    head_tokens = 4

    def select(self, view: LayerView) -> Keep:
        mat = _codebook(view.keys.shape[-1], self.code_width, 7)
        g = view.model.group_size
        out = []
        for h in range(view.n_kv_heads):
            kh = view.keys[h].float()
            bits = torch.sign(kh @ mat)
            lengths = kh.norm(dim=-1)
            total = torch.zeros(kh.shape[0])
            for j in range(g):
                qh = view.queries[h * g + j].float()
                est = _estimate(qh @ mat, bits, lengths, self.code_width) / math.sqrt(kh.shape[-1])
                total += torch.softmax(est, dim=-1).sum(dim=0)
            total[: self.head_tokens] = float("inf")
            out.append(total)
        return Keep.from_topk(torch.stack(out), view.budget, view.valid)
