"""Soft hand-off memory (board C, decode-time).

When a capped layer must give tokens back, the evicted entries need not vanish entirely: their values can be
handed to the entries that stay. Each evicted entry gives its value, in part, to the few newest survivors that
follow it, and how much it hands off depends on how much attention it was still getting compared with them.
Keys are never changed, so the survivors are still found by the same queries; only what they return carries a
trace of the entries that left.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, LayerView, Rewrite


class _Ledger:
    """Per-layer bookkeeping: running attention totals and a private random stream."""

    def __init__(self, layer: int) -> None:
        self.gen = torch.Generator().manual_seed(7919 * (layer + 1))

    def draw(self, p: torch.Tensor) -> torch.Tensor:
        return (torch.rand(p.shape, generator=self.gen) < p.cpu()).to(p.device, p.dtype)


class SoftHandoff(EvictionMethod):
    name = "soft_handoff"
    query_window = 32
    receivers = 4          # survivors that take a share of each evicted value
    keep_newest = 16

    def select(self, view: LayerView) -> Rewrite:
        ledger = view.state.setdefault("ledger", _Ledger(view.layer))
        valid = view.valid_mask()
        total = view.recall("received")
        if view.queries is not None:
            total = total + view.group(view.attention(reduce="sum"), "mean")
        view.remember("received", total)
        budget = view.budget
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            live = valid[h].nonzero().flatten()
            pos = view.positions[h, live]
            score = total[h, live].clone()
            n = live.numel()
            keep_n = min(budget, n)
            protect = torch.zeros(n, dtype=torch.bool, device=score.device)
            protect[max(0, n - min(self.keep_newest, keep_n)):] = True
            score = score.masked_fill(protect, float("inf"))
            kept = score.topk(keep_n).indices.sort().values
            gone_mask = torch.ones(n, dtype=torch.bool, device=score.device)
            gone_mask[kept] = False
            vals = view.values[h, live].float().clone()
            acc = total[h, live]
            for e in gone_mask.nonzero().flatten().tolist():
                after = kept[pos[kept] > pos[e]][: self.receivers]
                if after.numel() == 0:
                    after = kept[-self.receivers:]
                ratio = (acc[e] / acc[after].mean().clamp(min=1e-6)).clamp(0.0, 1.0)
                mask = ledger.draw(ratio.expand(after.numel()))
                vals[after] += mask[:, None] * vals[e][None, :] / after.numel()
            ks.append(view.keys[h, live[kept]])
            vs.append(vals[kept].to(view.values.dtype))
            ps.append(pos[kept])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
