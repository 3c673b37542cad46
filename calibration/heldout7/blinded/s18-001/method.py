"""Robust-sketch window attention (board B_online): the closing context queries rank the context through a robust
three-part sketch of the keys (a coarse grid, a thin correction for what the grid misses, and the few extreme
entries kept as they are), which removes the fine-grained noise of the keys from the ranking while keeping their
structure and their outliers."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _split_extremes(x: torch.Tensor, share: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Per head, the ``share`` of entries with the largest magnitude go to a sparse part; returns (dense, sparse)."""
    h = x.shape[0]
    flat = x.reshape(h, -1)
    n = max(0, int(share * flat.shape[1]))
    sparse = torch.zeros_like(flat)
    if n:
        idx = flat.abs().topk(n, dim=1).indices
        sparse.scatter_(1, idx, flat.gather(1, idx))
    return (flat - sparse).reshape_as(x), sparse.reshape_as(x)


def _grid(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Uniform min-max grid per (head, channel) over the tokens."""
    lo = x.amin(dim=1, keepdim=True)
    hi = x.amax(dim=1, keepdim=True)
    steps = (1 << bits) - 1
    scale = ((hi - lo) / steps).clamp_min(1e-8)
    return torch.round((x - lo) / scale) * scale + lo


def _thin(residual: torch.Tensor, rank: int) -> torch.Tensor:
    """Best rank-``rank`` approximation of each head's (T, D) residual."""
    if rank <= 0:
        return torch.zeros_like(residual)
    u, s, vh = torch.linalg.svd(residual, full_matrices=False)
    r = min(rank, s.shape[-1])
    return (u[..., :r] * s[..., None, :r]) @ vh[..., :r, :]


def robust_sketch(keys: torch.Tensor, bits: int, rank: int, share: float) -> torch.Tensor:
    dense, sparse = _split_extremes(keys.float(), share)
    coarse = _grid(dense, bits)
    return coarse + _thin(dense - coarse, rank) + sparse


class RobustSketchWindow(EvictionMethod):
    name = "robust_sketch_window"
    query_window = 32
    bits = 2
    rank = 4
    extreme_share = 0.02
    kernel = 7

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        sk = robust_sketch(view.keys, self.bits, self.rank, self.extreme_share)
        h_kv, t, d = sk.shape
        g = view.model.group_size
        rows = view.queries.float().reshape(h_kv, -1, d)
        logits = torch.einsum("hnd,htd->hnt", rows, sk) * view.model.scale
        qpos = view.query_positions.repeat(g)
        hide = (view.positions[:, None, :] > qpos[None, :, None]) | ~view.valid_mask()[:, None, :]
        score = logits.masked_fill(hide, float("-inf")).softmax(dim=-1).nan_to_num(0.0).sum(dim=1) / g
        score = F.avg_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                             count_include_pad=False)[:, 0]
        closing = view.positions >= int(view.query_positions.min())
        return Keep.from_topk(score.masked_fill(closing, float("inf")), view.budget, view.valid)
