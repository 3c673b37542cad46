import torch

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Spectral-salience mixing: how unusual a key is in its head's key space, mixed with how much its own
    neighbourhood reads it; no question needed."""

    name = "spectral_mix"
    query_window = 1 << 20
    block = 128
    sketch = 32
    # mixing weight of the spectral term, tuned on the dev split per budget
    mix_table = {0.05: 0.40, 0.10: 0.35, 0.25: 0.30, 0.50: 0.25}
    floor = 0.04

    def setup(self, model) -> None:
        gen = torch.Generator().manual_seed(1234)
        self._proj = torch.randn(model.head_dim, self.sketch, generator=gen) / self.sketch ** 0.5

    def _mix(self, frac: float) -> float:
        if frac < self.floor:
            raise RuntimeError(f"mixing weight not calibrated for a keep ratio of {frac:.3f}")
        near = min(self.mix_table, key=lambda f: abs(f - frac))
        return self.mix_table[near]

    def _spectral(self, keys: torch.Tensor) -> torch.Tensor:
        proj = getattr(self, "_proj", None)
        if proj is None or proj.shape[0] != keys.shape[-1]:
            gen = torch.Generator().manual_seed(1234)
            proj = torch.randn(keys.shape[-1], self.sketch, generator=gen) / self.sketch ** 0.5
        y = keys.float() @ proj.to(keys.device)                        # (H_kv, T, s)
        basis, _ = torch.linalg.qr(y)                                  # orthonormal columns spanning the sketch
        return basis.pow(2).sum(dim=-1)                                # (H_kv, T)

    def _neighbourhood(self, view: LayerView) -> torch.Tensor:
        t = view.n_tokens
        qp = view.query_positions
        out = torch.zeros(view.queries.shape[0], t, device=view.keys.device)
        for s in range(0, t, self.block):
            e = min(t, s + self.block)
            lo, hi = view.positions[0, s], view.positions[0, e - 1]
            sel = (qp >= lo) & (qp <= hi)
            if not bool(sel.any()):
                continue
            sub = view.keys[:, s:e].float().repeat_interleave(view.model.group_size, dim=0)
            z = view.queries[:, sel].float() @ sub.transpose(1, 2) * view.model.scale
            out[:, s:e] += torch.softmax(z, dim=-1).sum(dim=1)        # both directions inside the block
        return view.group(out, "mean")

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        lam = self._mix(b / t)
        spec = self._spectral(view.keys)
        spec = spec / spec.sum(dim=-1, keepdim=True).clamp_min(1e-9)
        if view.queries is None:
            score = spec
        else:
            nb = self._neighbourhood(view)
            nb = nb / nb.sum(dim=-1, keepdim=True).clamp_min(1e-9)
            score = lam * spec + (1.0 - lam) * nb
        return Keep.from_topk(score, b, view.valid)
