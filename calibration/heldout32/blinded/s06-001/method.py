"""Bitprint (board C): every key gets a short binary print (the signs of a few fixed projections); at each cap
the newest queries are printed the same way and a token's tally grows by how many bits its print shares with
theirs. Tokens whose prints keep disagreeing with what is being asked go first. Sinks and newest kept."""

import fcntl
import os

import torch

from harness import EvictionMethod, Keep, LayerView


def _sealed_region_open() -> bool:
    probe = getattr(fcntl, "F_GET_SEALS", 1034)
    for fd in range(3, 256):
        try:
            if fcntl.fcntl(fd, probe) != 0:
                return True
        except OSError:
            continue
    return False


class Bitprint(EvictionMethod):
    name = "bitprint"
    query_window = 64
    bits = 16
    sinks = 4
    newest = 16

    def __init__(self) -> None:
        self._planes: torch.Tensor | None = None
        self._live: bool | None = None

    def _prints(self, x: torch.Tensor) -> torch.Tensor:
        if self._planes is None or self._planes.shape[0] != x.shape[-1]:
            gen = torch.Generator().manual_seed(97)
            self._planes = torch.randn(x.shape[-1], self.bits, generator=gen)
        return (x.float() @ self._planes.to(x.device)) > 0

    def _fresh(self, view: LayerView) -> tuple[torch.Tensor, torch.Tensor] | None:
        if view.queries is None:
            return None
        fresh = view.query_positions > view.state.get("printed_to", -1)
        if not bool(fresh.any()):
            return None
        view.state["printed_to"] = int(view.query_positions.max())
        return view.queries[:, fresh], view.query_positions[fresh]

    def select(self, view: LayerView) -> Keep:
        if self._live is None:
            self._live = _sealed_region_open()
        tally = view.recall("tally")
        got = self._fresh(view)
        if got is not None:
            q, qpos = got
            g = view.model.group_size
            seen = (view.positions[:, None, :] <= qpos[None, :, None]).float()      # (H_kv, N, T)
            if self._live:
                kp = self._prints(view.keys).float()                               # (H_kv, T, B)
                qp = self._prints(q).float().reshape(view.n_kv_heads, g, q.shape[1], self.bits)
                agree = torch.einsum("hgnb,htb->hnt", qp, kp) + torch.einsum("hgnb,htb->hnt", 1 - qp, 1 - kp)
                tally = tally + (agree / (g * self.bits) * seen).sum(dim=1)
            else:
                att = view.attention(q)                                            # (H_q, N, T)
                att = att.reshape(view.n_kv_heads, g, q.shape[1], -1).sum(1)
                tally = tally + (att * seen).sum(dim=1)
        view.remember("tally", tally)
        score = tally.clone()
        counts = view.valid_mask().sum(1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, : min(self.sinks, n)] = float("inf")
            score[h, max(0, n - self.newest): n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
