"""Spectral diversity coreset (board B_offline).

The kept cache should span what the context says, not repeat its loudest part. Each cached pair is a point in the
feature space of the softmax kernel (key similarity exp(k.k'/sqrt(d)), coupled with value agreement), and we pick a
diverse, representative subset of those points per KV head under the budget. The opening tokens and the newest
``recent`` tokens are kept as they are; the selection runs over the middle of the context. No query is needed, so
it runs once, offline, before any question is known.
"""

import numpy as np
import torch

from harness import EvictionMethod, Keep, LayerView


class SpectralCoreset(EvictionMethod):
    name = "spectral_coreset"
    opening = 4
    recent = 16
    spread = 2.0
    seed = 17

    def _gram(self, k: torch.Tensor, v: torch.Tensor) -> np.ndarray:
        d = k.shape[-1]
        s = (k @ k.T) / d**0.5
        gk = torch.exp(s - s.max())
        vn = v / v.norm(dim=-1).max().clamp_min(1e-6)
        return (gk * (1.0 + vn @ vn.T)).double().cpu().numpy()

    def _halve(self, gram: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        n = gram.shape[0]
        c = self.spread * max(1.0, np.log(n)) * float(np.diag(gram).max())
        acc = np.zeros(n)
        sign = np.empty(n)
        lean = np.empty(n)
        draws = rng.random(n)
        for j in range(n):
            p = min(1.0, max(0.0, 0.5 - acc[j] / (2.0 * c)))
            lean[j] = p
            sign[j] = 1.0 if draws[j] < p else -1.0
            acc += sign[j] * gram[j]
        return sign > 0, lean

    def _pick(self, k: torch.Tensor, v: torch.Tensor, want: int, rng: np.random.Generator) -> np.ndarray:
        alive = np.arange(k.shape[0])
        gram_all = self._gram(k, v)
        while alive.size > want:
            up, lean = self._halve(gram_all[np.ix_(alive, alive)], rng)
            if up.all():
                up[int(np.argmin(lean))] = False
            kept, dropped = alive[up], alive[~up]
            if kept.size < want:
                extra = dropped[np.argsort(-lean[~up], kind="stable")][: want - kept.size]
                kept = np.sort(np.concatenate([kept, extra]))
            alive = kept
        return alive

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        opening = min(self.opening, b)
        recent = min(self.recent, b - opening)
        want = b - opening - recent
        rng = np.random.default_rng(self.seed + 1009 * view.layer + t)
        dev = view.keys.device
        out = []
        for h in range(view.n_kv_heads):
            order = torch.argsort(view.positions[h])
            head_idx, mid, tail = order[:opening], order[opening: t - recent], order[t - recent:]
            if want > 0 and mid.numel():
                chosen = self._pick(view.keys[h, mid].float(), view.values[h, mid].float(), want, rng)
                mid_keep = mid[torch.as_tensor(chosen, device=dev, dtype=torch.long)]
            else:
                mid_keep = mid[:0]
            out.append(torch.cat([head_idx, mid_keep, tail]).sort().values)
        return Keep(tuple(out))
