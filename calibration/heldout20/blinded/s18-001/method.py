"""Signature-distance eviction (board C, decode-time eviction).

Every key gets a 32-bit signature: the signs of its projections on 32 fixed random directions. When a layer is full,
the signatures of its newest 8 queries are compared with every key's signature; the keys whose signatures differ from
the queries' in the most bits point away from where the generation is looking and are the ones to let go. Counting
differing bits is far cheaper than softmax attention and never materialises attention weights. The newest 16 tokens
are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView

BITS = 32


def _signature(x: torch.Tensor, planes: torch.Tensor) -> torch.Tensor:
    """(..., D) -> (..., ) int64 bit-packed signs of x @ planes."""
    bits = (x.float() @ planes > 0).long()                              # (..., BITS)
    weights = (2 ** torch.arange(BITS, device=x.device)).long()
    return (bits * weights).sum(dim=-1)


def _popcount(x: torch.Tensor) -> torch.Tensor:
    c = torch.zeros_like(x)
    for b in range(BITS):
        c += (x >> b) & 1
    return c


class SignatureDistanceEviction(EvictionMethod):
    name = "signature_distance"
    query_window = 8
    newest = 16

    def setup(self, model) -> None:
        gen = torch.Generator().manual_seed(2024)
        self._planes = torch.randn(model.head_dim, BITS, generator=gen)

    def select(self, view: LayerView) -> Keep:
        planes = getattr(self, "_planes", None)
        if planes is None or planes.shape[0] != view.keys.shape[-1]:
            planes = self._planes = torch.randn(view.keys.shape[-1], BITS,
                                                generator=torch.Generator().manual_seed(2024))
        planes = planes.to(view.keys.device)
        g = view.model.group_size
        key_sig = _signature(view.keys, planes)                           # (H_kv, T)
        q_sig = _signature(view.queries, planes)                          # (H_q, N)
        q_sig = q_sig.view(view.n_kv_heads, g * q_sig.shape[1])           # the group's queries together
        diff = _popcount(key_sig[:, None, :] ^ q_sig[:, :, None])         # (H_kv, gN, T)
        closeness = -diff.float().mean(dim=1)

        live = view.valid_mask()
        pos = view.positions.masked_fill(~live, -1)
        top = pos.max(dim=1, keepdim=True).values
        closeness = closeness.masked_fill(pos > top - self.newest, 1e9)
        return Keep.from_topk(closeness, view.budget, view.valid)
