"""Codebook attention (board B_online): the window's attention estimated through small per-subspace codebooks of
the keys, which smooths out key noise and lets similar keys share evidence."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _codebook(x: torch.Tensor, n_codes: int, iters: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """Lloyd iterations on (n, s) sub-vectors from evenly spaced seeds: (codes (n,), centroids (c, s))."""
    n = x.shape[0]
    c = min(n_codes, n)
    cent = x[torch.linspace(0, n - 1, c, device=x.device).round().long()].clone()
    for _ in range(iters):
        d = (x * x).sum(-1, keepdim=True) - 2 * x @ cent.t() + (cent * cent).sum(-1)[None]
        codes = d.argmin(dim=1)
        summed = torch.zeros_like(cent).index_add_(0, codes, x)
        size = torch.bincount(codes, minlength=c).float()[:, None]
        cent = torch.where(size > 0, summed / size.clamp_min(1), cent)
    d = (x * x).sum(-1, keepdim=True) - 2 * x @ cent.t() + (cent * cent).sum(-1)[None]
    return d.argmin(dim=1), cent


class CodebookAttention(EvictionMethod):
    name = "codebook_attention"
    query_window = 32
    parts = 8
    codes = 16
    min_ratio = 0.12   # below this the codebooks are too coarse to rank reliably

    def _locality(self, view: LayerView) -> Keep:
        score = view.positions.float().clone()
        score[:, :4] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        n_real = int(valid.sum(dim=1).max())
        if view.budget >= n_real:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.queries is None or view.budget < self.min_ratio * n_real:
            return self._locality(view)
        g = view.model.group_size
        d = view.keys.shape[-1]
        sub = d // self.parts
        est = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
            q = view.queries[h * g:(h + 1) * g].float()                      # (g, W, d)
            logits = torch.zeros(q.shape[0], q.shape[1], k.shape[0], device=k.device)
            for p in range(self.parts):
                sl = slice(p * sub, (p + 1) * sub)
                codes, cent = _codebook(k[:, sl], self.codes)
                table = q[:, :, sl] @ cent.t()                                # (g, W, c)
                logits += table[:, :, codes]
            logits = logits * view.model.scale
            logits = logits.masked_fill(~valid[h][None, None], float("-inf"))
            est[h] = logits.softmax(dim=-1).sum(dim=(0, 1)) / g
        est = est.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        return Keep.from_topk(est, view.budget, view.valid)
