"""Spectral condensation (board B_offline).

The middle of a long context changes slowly along the sequence: neighbouring keys and values are strongly
correlated, and most of their energy sits in the slow components. Instead of choosing tokens we condense the
middle: along the token axis each channel of the keys and values is expanded in a cosine basis, the slow
coefficients are kept and the sequence is resynthesised at the budget's length. The first 4 tokens and the most
recent quarter of the budget stay exact; resynthesised entries are placed at evenly spaced positions over the
condensed span.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView, Rewrite

SINKS = 4
RECENT_SHARE = 0.25


def _cosine_basis(n: int, m: int, device) -> torch.Tensor:
    """(m, n) orthonormal DCT-II rows 0..m-1 for length n."""
    i = torch.arange(n, dtype=torch.float64, device=device)
    f = torch.arange(m, dtype=torch.float64, device=device)[:, None]
    basis = torch.cos(math.pi * (i + 0.5) * f / n) * math.sqrt(2.0 / n)
    basis[0] /= math.sqrt(2.0)
    return basis


def _condense(x: torch.Tensor, m: int) -> torch.Tensor:
    """(n, D) -> (m, D): keep the m slowest cosine coefficients, resynthesise on m points."""
    n = x.shape[0]
    coef = _cosine_basis(n, m, x.device) @ x.double()                      # (m, D)
    synth = _cosine_basis(m, m, x.device).T @ coef                         # inverse on the short grid
    return (synth * math.sqrt(m / n)).float()


class SpectralCondensation(EvictionMethod):
    name = "spectral_condensation"

    def select(self, view: LayerView):
        t, b = view.n_tokens, view.budget
        recent = max(1, int(b * RECENT_SHARE))
        mid = b - recent - SINKS
        if b >= t or view.valid is not None or mid < 2:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        lo, hi = SINKS, t - recent
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            k, v, p = view.keys[h], view.values[h], view.positions[h]
            ck = _condense(k[lo:hi].float(), mid)
            cv = _condense(v[lo:hi].float(), mid)
            cp = torch.linspace(float(p[lo]), float(p[hi - 1]), mid, device=p.device).round().long()
            ks.append(torch.cat([k[:lo].float(), ck, k[hi:].float()]).to(view.keys.dtype))
            vs.append(torch.cat([v[:lo].float(), cv, v[hi:].float()]).to(view.values.dtype))
            ps.append(torch.cat([p[:lo], cp, p[hi:]]))
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
