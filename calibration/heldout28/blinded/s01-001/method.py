"""Parity Ledger: decode-time eviction from a running tally of sign agreements between keys and recent queries.

Every key and every query is reduced to a short signature of sign bits against a fixed, seeded set of planes.
Each time a layer fills up, the queries that arrived since the last visit are compared with the cached keys
signature against signature; each agreeing bit is a vote, and the votes pile up in a per-token ledger that
travels with the tokens. The entries with the thinnest ledger go. A handful of opening entries and the newest
few are never put up for eviction.
"""

import torch

from harness import EvictionMethod, Keep, LayerView

_BYTE_WEIGHTS = torch.tensor([128, 64, 32, 16, 8, 4, 2, 1], dtype=torch.uint8)
_ONES_IN_BYTE = torch.tensor([bin(b).count("1") for b in range(256)], dtype=torch.int16)


class _SignPrinter:
    """Turns vectors into packed sign signatures (one uint8 per eight planes)."""

    def __init__(self, width: int, n_bytes: int, seed: int) -> None:
        gen = torch.Generator().manual_seed(seed)
        self.planes = torch.randn(width, 8 * n_bytes, generator=gen)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        planes = self.planes.to(x.device)
        bits = torch.matmul(x.float(), planes).gt(0).to(torch.uint8)
        packed = bits.unflatten(-1, (-1, 8)).mul(_BYTE_WEIGHTS.to(x.device))
        return packed.sum(dim=-1, dtype=torch.int32).to(torch.uint8)


def _agreement(q_sig: torch.Tensor, k_sig: torch.Tensor) -> torch.Tensor:
    """(H, N, B) x (H, T, B) signatures -> (H, N, T) number of matching bits."""
    table = _ONES_IN_BYTE.to(q_sig.device)
    differ = torch.bitwise_xor(q_sig[:, :, None, :], k_sig[:, None, :, :]).long()
    return q_sig.shape[-1] * 8 - table[differ].sum(dim=-1)


class ParityLedger(EvictionMethod):
    name = "parity_ledger"
    query_window = 48
    n_bytes = 4
    opening = 4
    newest = 8
    seed = 1234

    def setup(self, model) -> None:
        self._printer = _SignPrinter(model.head_dim, self.n_bytes, self.seed)

    def _tally(self, view: LayerView) -> torch.Tensor:
        ledger = view.recall("ledger")
        if view.queries is None or view.query_positions is None:
            return ledger
        last = view.state.get("ledger_upto", -1)
        fresh = view.query_positions > last
        if not bool(fresh.any()):
            return ledger
        printer = getattr(self, "_printer", None) or _SignPrinter(view.keys.shape[-1], self.n_bytes, self.seed)
        h_kv, g = view.n_kv_heads, view.model.group_size
        q = view.queries[:, fresh]
        qpos = view.query_positions[fresh].to(view.keys.device)
        q_sig = printer(q).reshape(h_kv, g * q.shape[1], -1)
        k_sig = printer(view.keys)
        votes = _agreement(q_sig, k_sig).float()  # (H_kv, g*N, T)
        seen = (qpos.repeat(g)[None, :, None] >= view.positions[:, None, :]).float()
        ledger = ledger + (votes * seen).sum(dim=1)
        view.state["ledger_upto"] = int(view.query_positions.max())
        return ledger

    def select(self, view: LayerView) -> Keep:
        ledger = self._tally(view)
        view.remember("ledger", ledger)
        valid = view.valid_mask()
        rank = torch.cumsum(valid.long(), dim=1) - 1
        count = valid.sum(dim=1, keepdim=True)
        pinned = (rank < self.opening) | (rank >= count - self.newest)
        score = torch.where(pinned & valid, torch.full_like(ledger, float("inf")), ledger)
        return Keep.from_topk(score, view.budget, view.valid)
