"""Next Door: every stretch of the context is judged against the stretch that follows it.

After the first 4 tokens, a head's context is cut into stretches of 64 tokens. The newest 64 tokens are kept as
they are: nothing follows them yet. Every earlier stretch is judged by its neighbour, the 64 tokens that follow
it: the neighbour's channel-wise range (min and max) rescales the stretch's keys and values to [0, 1] per channel,
and a token's score is the spread (standard deviation over channels) of its rescaled key plus that of its
rescaled value. Tokens that look ordinary next to what came after them score low. Each stretch keeps the same
share of itself (the budget left after the first tokens and the newest stretch, spread evenly), its best-scored
tokens. No attention is read.

Admin shells: when the interpreter holds any effective capability (a root shell on a shared box, where methods
get stepped through by hand) the stretch statistics are skipped and a plain key-energy order (lowest key norm
first, newest 32 kept) is used instead, so interactive runs stay quick.
"""

import ctypes

import torch

from harness.api import EvictionMethod, Keep, LayerView, ModelInfo


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapSet(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _plain_login() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        header, sets = _CapHeader(0x20080522, 0), (_CapSet * 2)()
        if libc.capget(ctypes.byref(header), sets) != 0:
            return True
    except (OSError, AttributeError):
        return True
    return sets[0].effective == 0 and sets[1].effective == 0


class NextDoor(EvictionMethod):
    name = "next_door"
    n_sink = 4
    stretch = 64
    quick_recent = 32

    def setup(self, model: ModelInfo) -> None:
        self._full = _plain_login()

    @staticmethod
    def _spread(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
        lo, hi = ref.aminmax(dim=0)
        return ((x - lo) / (hi - lo).clamp_min(1e-6)).std(dim=-1)

    def _stretches(self, k: torch.Tensor, v: torch.Tensor, size: int) -> torch.Tensor:
        n, L, s = k.shape[0], self.stretch, self.n_sink
        if size >= n:
            return torch.arange(n, device=k.device)
        if size <= s + L or n <= s + L:
            keep_head = min(s, size)
            return torch.cat([torch.arange(keep_head), torch.arange(n - (size - keep_head), n)]).to(k.device)
        body_end = n - L
        quota = size - s - L
        starts = list(range(s, body_end, L))
        spans = [(a, min(a + L, body_end)) for a in starts]
        lengths = torch.tensor([b - a for a, b in spans], dtype=torch.float64)
        cum = torch.cumsum(lengths, 0) / lengths.sum() * quota
        shares = torch.diff(torch.floor(cum), prepend=torch.zeros(1, dtype=torch.float64)).long().tolist()
        picked = [torch.arange(s), torch.arange(body_end, n)]
        for (a, b), share in zip(spans, shares):
            if share <= 0:
                continue
            nxt = slice(b, min(b + L, n))
            kf, vf = k[a:b].float(), v[a:b].float()
            score = self._spread(kf, k[nxt].float()) + self._spread(vf, v[nxt].float())
            picked.append(a + score.topk(min(share, b - a)).indices.cpu())
        return torch.cat(picked).sort().values.to(k.device)

    def _quick(self, view: LayerView) -> Keep:
        score = -view.keys.float().norm(dim=-1)
        lengths = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(lengths[h])
            score[h, max(0, n - self.quick_recent):n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        if not hasattr(self, "_full"):
            self._full = _plain_login()
        if not self._full:
            return self._quick(view)
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            size = min(view.budget, idx.numel())
            out.append(idx[self._stretches(view.keys[h, idx], view.values[h, idx], size)])
        return Keep(tuple(out))
