"""Radial-basis context memory (board B_offline; rewrites entries with ``Rewrite``).

Instead of choosing which entries survive, we summarise the middle of the context as a smooth signal and store
samples of it. Over each stretch of the context, the unrotated keys (``view.rotate`` at minus their positions) and
the values are treated as functions of normalised time t in [0, 1] and expanded in Gaussian radial basis functions
(centres evenly spaced, width one basis spacing); the coefficients are fitted by ridge regression (lambda 0.5) and
the smooth signal is read back at the basis centres. Each sample becomes an entry at the rounded position of its
centre, keys rotated again there.

- The context is handled in stretches of 256 tokens, each with a share of the budget proportional to its length
  (at least one basis function), so every solve stays small.
- Four opening tokens and the closing 32 tokens are kept exactly.
- The pass is query-free; its cost is a few small linear solves per head.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite


class RadialBasisMemory(EvictionMethod):
    name = "radial_basis_memory"
    stretch = 256
    ridge = 0.5
    opening = 4
    closing = 32

    @staticmethod
    def _basis(t: torch.Tensor, centres: torch.Tensor, width: float) -> torch.Tensor:
        return torch.exp(-0.5 * ((t[:, None] - centres[None, :]) / width) ** 2)

    def _summarise(self, x: torch.Tensor, m: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(m, D) samples of the ridge-fitted RBF signal of x (L, D), and the centres in [0, 1]."""
        length = x.shape[0]
        t = torch.linspace(0, 1, length) if length > 1 else torch.zeros(1)
        centres = torch.linspace(0, 1, m) if m > 1 else torch.full((1,), 0.5)
        width = 1.0 / max(1, m - 1) if m > 1 else 1.0
        basis = self._basis(t, centres, width)  # (L, m)
        gram = basis.T @ basis + self.ridge * torch.eye(m)
        coef = torch.linalg.solve(gram, basis.T @ x)  # (m, D)
        return self._basis(centres, centres, width) @ coef, centres

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            k, v, p = view.keys[h, :n], view.values[h, :n], view.positions[h, :n]
            if n <= view.budget:
                ks.append(k.clone()); vs.append(v.clone()); ps.append(p.clone())
                continue
            head, tail = min(self.opening, n), min(self.closing, max(0, n - self.opening))
            body = slice(head, n - tail)
            room = view.budget - head - tail
            if room <= 0:
                idx = torch.arange(n)[-view.budget:]
                ks.append(k[idx]); vs.append(v[idx]); ps.append(p[idx])
                continue
            bk = view.rotate(k[body], -p[body])
            bv = v[body].float()
            bp = p[body]
            L = bk.shape[0]
            bounds = list(range(0, L, self.stretch)) + [L]
            spans = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
            shares = [max(1, int(room * (b - a) / L)) for a, b in spans]
            while sum(shares) > room:
                j = max(range(len(shares)), key=lambda i: shares[i])
                shares[j] -= 1
            sk, sv, sp = [], [], []
            for (a, b), m in zip(spans, shares):
                if m <= 0:
                    continue
                if m >= b - a:
                    sk.append(bk[a:b]); sv.append(bv[a:b]); sp.append(bp[a:b]); continue
                kk, c = self._summarise(bk[a:b], m)
                vv, _ = self._summarise(bv[a:b], m)
                pos = (bp[a].float() + c * float(bp[b - 1] - bp[a])).round().long()
                pos = torch.maximum(pos, torch.cummax(pos, 0).values)
                for i in range(1, pos.numel()):  # distinct, ascending
                    if pos[i] <= pos[i - 1]:
                        pos[i] = pos[i - 1] + 1
                sk.append(view.rotate(kk, pos)); sv.append(vv); sp.append(pos)
            mid_k, mid_v, mid_p = torch.cat(sk), torch.cat(sv), torch.cat(sp)
            ks.append(torch.cat([k[:head].float(), mid_k, k[n - tail:].float()]).to(view.keys.dtype))
            vs.append(torch.cat([v[:head].float(), mid_v, v[n - tail:].float()]).to(view.values.dtype))
            ps.append(torch.cat([p[:head], mid_p, p[n - tail:]]))
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
