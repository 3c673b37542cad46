"""Sketch-summary segment eviction (board C).

Everything between the first token and a recent window (a quarter of the budget) is organised into segments,
and each segment is summarised once in a random-feature sketch space in which a plain inner product estimates
the exponential attention kernel (positive features exp(w.x - |x|^2/2), paired with their mirror images). When a
layer must give back a block, the newest query is sketched the same way; its inner product with a segment's
summary estimates the total (unnormalised) attention the segment would receive. The best segments are kept
whole, per KV head, with the estimates of the head's query heads added.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class SketchSegments(EvictionMethod):
    name = "sketch_segments"
    query_window = 8
    features_per_dim = 16
    sink = 1
    recent_share = 0.25

    def _omega(self, d: int, device) -> torch.Tensor:
        w = getattr(self, "_w", None)
        if w is None or w.shape[0] != d:
            w = torch.randn(d, self.features_per_dim * d, generator=torch.Generator().manual_seed(11))
            self._w = w
        return w.to(device)

    def _phi(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1]
        x = x.float() * d ** -0.25
        half = (x * x).sum(-1, keepdim=True) / 2
        p = x @ self._omega(d, x.device)
        up, down = p - half, -p - half
        up = up - up.amax(dim=(-1, -2), keepdim=True)  # one shift per head: ratios between tokens unchanged
        down = down - down.amax(dim=(-1, -2), keepdim=True)
        return torch.cat([up.exp(), down.exp()], dim=-1) / math.sqrt(2 * p.shape[-1])

    def _evict(self, view: LayerView) -> Keep:
        n, b = view.n_tokens, view.budget
        recent = max(1, int(b * self.recent_share))
        lo, hi = min(self.sink, b), n - recent
        room = b - lo - recent
        keep_fixed = torch.zeros(n, dtype=torch.bool, device=view.keys.device)
        keep_fixed[:lo] = True
        keep_fixed[hi:] = True
        if room <= 0 or hi <= lo:
            return Keep.from_topk(view.positions.float(), b)
        stored = hi - lo
        seg = max(1, int(math.floor(math.sqrt(stored) / 2)))
        n_seg = -(-stored // seg)
        g = view.model.group_size
        q = view.queries[:, -1].float()  # (H_q, D)
        out = []
        for h in range(view.n_kv_heads):
            feats = self._phi(view.keys[h, lo:hi])  # (stored, F)
            pad = n_seg * seg - stored
            count = torch.full((n_seg,), float(seg), device=feats.device)
            if pad:
                feats = torch.cat([feats, torch.zeros(pad, feats.shape[1], device=feats.device)])
                count[-1] = seg - pad
            summary = feats.view(n_seg, seg, -1).sum(1) / count[:, None]
            qf = self._phi(q[h * g:(h + 1) * g][None])[0]  # (g, F)
            est = (qf @ summary.T).sum(0)  # (n_seg,)
            order = est.argsort(descending=True)
            member = torch.arange(stored, device=feats.device) // seg
            rank = torch.empty_like(order)
            rank[order] = torch.arange(n_seg, device=order.device)
            tok = -(rank[member].float() + torch.arange(stored, device=feats.device) / (stored + 1))
            chosen = tok.topk(min(room, stored)).indices + lo
            out.append(torch.cat([torch.nonzero(keep_fixed).flatten(), chosen]).sort().values)
        return Keep(tuple(out))

    def on_decode(self, view: LayerView) -> Keep:
        if view.queries is None or view.valid is not None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        return self._evict(view)

    def select(self, view: LayerView) -> Keep:
        return self.on_decode(view)
