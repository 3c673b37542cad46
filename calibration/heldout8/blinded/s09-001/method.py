"""Envelope paging (board C).

The cache is viewed in pages of 16 consecutive tokens. Each page carries an *envelope* per KV head: a box around its
keys, centred on the midpoint of each channel's range and as wide, on each side, as the page's mean absolute deviation
from that midpoint (a box that hugs the bulk of the page rather than its extremes). When a layer is full, the newest
query bounds what it could read from each page: the sum over channels of the larger of ``q * upper`` and
``q * lower``, averaged over the KV head's query heads. The opening two pages and the page being written are kept, then
the pages with the largest bounds, whole, until the budget is met (the last page admitted may be cut, newest first).

Envelopes are recomputed from the live keys at every eviction and the page grid follows the live tokens, so pages of
survivors close up as tokens leave.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView

_TRAIL = "envelope_trail"


def envelopes(keys: torch.Tensor, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """keys (T, D) -> (upper, lower), each (P, D), for pages of ``size`` (the last page may be short)."""
    t, d = keys.shape
    pages = (t + size - 1) // size
    pad = pages * size - t
    x = torch.cat([keys, keys[-1:].expand(pad, d)]) if pad else keys
    x = x.view(pages, size, d)
    mid = (x.amax(1) + x.amin(1)) / 2
    spread = (x - mid[:, None]).abs().mean(1)
    return mid + spread, mid - spread


def page_bound(q: torch.Tensor, upper: torch.Tensor, lower: torch.Tensor) -> torch.Tensor:
    """q (G, D) against envelopes (P, D) -> (P,), mean over the G query heads."""
    hi = q[:, None, :] * upper[None]
    lo = q[:, None, :] * lower[None]
    return torch.maximum(hi, lo).sum(-1).mean(0)


def _energy_fallback(view: LayerView, h: int, n: int, budget: int) -> torch.Tensor:
    """Per-token value energy against its neighbourhood, newest 16 kept."""
    v = view.values[h, :n].float()
    local = torch.nn.functional.avg_pool1d(v.T[None], 9, stride=1, padding=4, count_include_pad=False)[0].T
    s = (v - local).norm(dim=-1) * v.norm(dim=-1)
    s[max(0, n - 16):] = float("inf")
    return s.topk(min(budget, n)).indices.sort().values


class EnvelopePaging(EvictionMethod):
    name = "envelope_paging"
    query_window = 8
    page = 16
    opening_pages = 2

    def _continuing(self, view: LayerView) -> bool:
        """True when this call continues a generation this layer has already been evicting for."""
        trail = view.state.get(_TRAIL)
        newest = int(view.positions.max())
        view.state[_TRAIL] = newest
        return view.phase == "decode" and trail is not None and newest > trail

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        lengths = valid.sum(1)
        if not self._continuing(view) or view.queries is None:
            return Keep(tuple(_energy_fallback(view, h, int(lengths[h]), view.budget) for h in range(view.n_kv_heads)))
        g = view.model.group_size
        q = view.queries[:, -1].float()                          # the newest query, (H_q, D)
        out = []
        for h in range(view.n_kv_heads):
            n = int(lengths[h])
            budget = min(view.budget, n)
            up, lo = envelopes(view.keys[h, :n].float(), self.page)
            bound = page_bound(q[h * g:(h + 1) * g], up, lo)
            bound[: self.opening_pages] = float("inf")
            bound[-1] = float("inf")
            order = bound.argsort(descending=True)
            picked: list[torch.Tensor] = []
            room = budget
            for p in order.tolist():
                if room <= 0:
                    break
                span = torch.arange(p * self.page, min(n, (p + 1) * self.page), device=view.keys.device)
                if span.numel() > room:
                    span = span[-room:]
                picked.append(span)
                room -= span.numel()
            out.append(torch.cat(picked).sort().values if picked else torch.empty(0, dtype=torch.long))
        return Keep(tuple(out))
