"""Spread-and-signal retention (board B_online, query-agnostic prefill).

Two things make a key worth keeping when the question is unknown: it points somewhere the rest of the cache does not
(its statistical leverage inside the key matrix: how much of the span it alone carries), and the context's own
closing rows already read it. Both are turned into distributions over the tokens and blended half and half; the
closing rows are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _leverage(keys: torch.Tensor, sketch: int, seed: int) -> torch.Tensor:
    """Approximate row leverage of keys (T, D): R from a Gaussian sketch's QR, then ||k R^-1||^2 per row."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    t = keys.shape[0]
    m = min(t, sketch)
    omega = torch.randn(m, t, generator=gen).to(keys.device) / m**0.5
    _, r = torch.linalg.qr(omega @ keys)
    diag = r.diagonal().abs()
    r = r + torch.diag(torch.where(diag < 1e-6, torch.full_like(diag, 1e-6), torch.zeros_like(diag)))
    whitened = torch.linalg.solve_triangular(r, keys.T, upper=True, left=True).T  # k R^-1
    return whitened.pow(2).sum(dim=-1)


class SpreadAndSignal(EvictionMethod):
    name = "spread_and_signal"
    query_window = 32
    mix = 0.5
    sketch = 256

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        signal = view.group(view.attention(reduce="mean"), "mean") if view.queries is not None else None
        scores = torch.full(view.keys.shape[:2], float("-inf"), device=view.keys.device)
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(1)
            k = view.keys[h, idx].float()
            k = k - k.mean(dim=0, keepdim=True)
            lev = _leverage(k, self.sketch, seed=1000 * view.layer + h)
            lev = lev / lev.sum().clamp_min(1e-9)
            if signal is not None:
                sig = signal[h, idx]
                lev = self.mix * lev + (1 - self.mix) * sig / sig.sum().clamp_min(1e-9)
            scores[h, idx] = lev
        if view.queries is not None:
            scores[view.positions >= int(view.query_positions.min())] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
