"""Sketch influence (board B_offline, attention-free): keep the entries that are hard to express through the
others, measured on a cheap random sketch of both the key rows and the value rows."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _influence(rows: torch.Tensor, probe: torch.Tensor) -> torch.Tensor:
    """Statistical influence of each row of rows (n, D) in the column space of rows @ probe."""
    sketch = rows @ probe                              # (n, r)
    basis, _ = torch.linalg.qr(sketch, mode="reduced")  # orthonormal columns
    return basis.pow(2).sum(dim=1)


class SketchInfluence(EvictionMethod):
    name = "sketch_influence"
    width = 16         # sketch columns
    opening = 4
    closing = 16
    seed = 7

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        d = view.keys.shape[-1]
        gen = torch.Generator(device="cpu").manual_seed(self.seed)
        probe = (torch.randn(d, self.width, generator=gen) / self.width ** 0.5).to(view.keys.device)
        live = view.valid_mask()
        score = torch.full(live.shape, float("-inf"), device=view.keys.device)
        for h in range(view.n_kv_heads):
            n = int(live[h].sum())
            if n == 0:
                continue
            k_inf = _influence(view.keys[h, :n].float(), probe)
            v_inf = _influence(view.values[h, :n].float(), probe)
            k_inf = k_inf / k_inf.sum().clamp_min(1e-9)
            v_inf = v_inf / v_inf.sum().clamp_min(1e-9)
            s = k_inf * v_inf
            guard = torch.zeros(n, dtype=torch.bool, device=s.device)
            guard[: min(self.opening, n)] = True
            close = min(self.closing, view.budget // 4)
            if close > 0:
                guard[max(0, n - close):] = True
            score[h, :n] = s.masked_fill(guard, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
