"""Lloyd Cover: k-means over each head's keys picks coverage tokens; window attention fills the rest."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def lloyd(x: torch.Tensor, k: int, iters: int = 8) -> torch.Tensor:
    """Spherical k-means on rows of ``x`` (n, d), evenly spaced initial centres; returns the index of the
    row nearest each final centre (k indices, possibly repeated)."""
    n = x.shape[0]
    cent = x[torch.linspace(0, n - 1, k, device=x.device).round().long()].clone()
    for _ in range(iters):
        assign = (x @ cent.T).argmax(dim=1)  # cosine: rows and centres are unit norm
        summed = torch.zeros_like(cent).index_add_(0, assign, x)
        filled = summed.norm(dim=1) > 0  # an empty cluster keeps its previous centre
        cent[filled] = F.normalize(summed[filled], dim=1)
    return (cent @ x.T).argmax(dim=1)


class LloydCover(EvictionMethod):
    name = "lloyd_cover"
    query_window = 16
    cover_share = 0.25
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is not None:
            window = view.group(view.attention(reduce="sum"), "mean")
        else:
            window = view.positions.float() / (view.positions.max().float() + 1)
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            b = min(view.budget, idx.numel())
            s = window[h, idx].clone()
            s[view.positions[h, idx] < self.n_sink] = float("inf")
            k = int(self.cover_share * b)
            if k >= 2 and idx.numel() > k:
                reps = lloyd(F.normalize(view.keys[h, idx].float(), dim=-1), k)
                s[reps] = float("inf")  # one representative per cluster is always kept
            keep = s.topk(b).indices
            out.append(idx[keep].sort().values)
        return Keep(tuple(out))
