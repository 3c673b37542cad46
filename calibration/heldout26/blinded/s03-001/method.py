"""Carry-forward eviction (board C, decode-time).

Eviction throws a token's value away even when the token still drew real attention. Carry-forward eviction
decides *what* to evict the usual way (attention received, summed over every query since the cache was
filled and carried across evictions by position; the newest half of the budget always stays), but lets a
dropped token hand its value forward: each evicted token is offered to the four kept tokens that follow it,
and each of those takes a quarter of the evicted value with a probability equal to the evicted token's
received attention relative to theirs (capped at 1). Tokens that mattered little rarely hand anything on;
tokens that mattered as much as their neighbours almost always do. Keys are never changed.
"""

from __future__ import annotations

import numpy as np
import torch

from harness import EvictionMethod, LayerView, Rewrite


class CarryForward(EvictionMethod):
    name = "carry_forward"
    query_window = 64
    newest_share = 0.5
    neighbours = 4

    def _received(self, view: LayerView) -> torch.Tensor:
        acc = view.recall("recv")
        if view.queries is not None:
            seen = view.state.get("seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                got = view.attention(view.queries[:, fresh], reduce="sum") if not bool(fresh.all()) \
                    else view.attention(reduce="sum")
                acc = acc + view.group(got, "sum")
                view.state["seen"] = int(view.query_positions.max())
        return acc

    def select(self, view: LayerView) -> Rewrite:
        acc = self._received(view)
        calls = view.state.get("calls", 0)
        view.state["calls"] = calls + 1
        rng = np.random.default_rng(10007 * (view.layer + 1) + calls)
        valid = view.valid_mask()
        keys, values, positions = [], [], []
        for h in range(view.n_kv_heads):
            live = torch.nonzero(valid[h]).flatten()
            n = live.numel()
            want = min(view.budget, n)
            recv = acc[h, live].clone()
            score = recv.clone()
            score[max(0, n - int(want * self.newest_share)):] = float("inf")
            keep = torch.zeros(n, dtype=torch.bool, device=recv.device)
            keep[score.topk(want).indices] = True
            k = view.keys[h, live]
            v = view.values[h, live].float().clone()
            kept_at = torch.nonzero(keep).flatten()
            r = recv.cpu().numpy()
            vv = v.cpu().numpy()
            ka = kept_at.cpu().numpy()
            for e in torch.nonzero(~keep).flatten().cpu().numpy():
                after = ka[np.searchsorted(ka, e):][: self.neighbours]
                if after.size == 0:
                    continue
                ratio = r[e] / max(float(r[after].mean()), 1e-9)
                take = rng.random(after.size) < min(1.0, ratio)
                if take.any():
                    vv[after[take]] += vv[e] / self.neighbours
            keys.append(k[keep])
            values.append(torch.from_numpy(vv).to(view.values.device, view.values.dtype)[keep])
            positions.append(view.positions[h, live][keep])
        # carry the received attention of what stays, by position
        view.remember("recv", acc)
        return Rewrite(tuple(keys), tuple(values), tuple(positions))
