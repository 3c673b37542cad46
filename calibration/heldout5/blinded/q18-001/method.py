"""Coherent-run folding (board B_online)."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


def _runs(keys: torch.Tensor, limit: float, frozen: torch.Tensor) -> list[tuple[int, int]]:
    """Maximal runs of consecutive tokens whose neighbouring keys agree (cosine > limit)."""
    kn = F.normalize(keys.float(), dim=-1)
    link = ((kn[:-1] * kn[1:]).sum(-1) > limit) & ~frozen[:-1] & ~frozen[1:]
    runs, start = [], 0
    for i, joined in enumerate(link.tolist()):
        if not joined:
            runs.append((start, i + 1))
            start = i + 1
    runs.append((start, keys.shape[0]))
    return runs


class CoherentRunFolding(EvictionMethod):
    name = "coherent_run_folding"
    query_window = 32
    limit = 0.8
    sigma = 1.0

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        dtype = view.keys.dtype
        w0 = int(view.query_positions.min()) if view.query_positions is not None else 1 << 62
        if view.queries is not None:
            imp = view.group(view.attention(reduce="sum"), "mean")
        else:
            imp = view.keys.float().norm(dim=-1).neg()
        K, V, P = [], [], []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            k, v, p = view.keys[h, idx].float(), view.values[h, idx].float(), view.positions[h, idx]
            a = imp[h, idx]
            frozen = p >= w0
            new_k, new_v, new_p, new_a = [], [], [], []
            for lo, hi in _runs(k, self.limit, frozen):
                if hi - lo == 1:
                    new_k.append(k[lo]), new_v.append(v[lo]), new_p.append(p[lo]), new_a.append(a[lo])
                    continue
                pivot = lo + int(a[lo:hi].argmax())
                d2 = ((k[lo:hi] - k[pivot]) ** 2).sum(-1)
                bw = 2 * (self.sigma ** 2) * d2.mean().clamp_min(1e-6)
                w = torch.exp(-d2 / bw)
                w = w / w.sum()
                new_k.append((w[:, None] * k[lo:hi]).sum(0))
                new_v.append((w[:, None] * v[lo:hi]).sum(0))
                new_p.append(p[pivot])
                new_a.append(a[lo:hi].sum())
            k2, v2, p2, a2 = torch.stack(new_k), torch.stack(new_v), torch.stack(new_p), torch.stack(new_a)
            if k2.shape[0] > view.budget:
                a2 = a2.masked_fill(p2 >= w0, float("inf"))
                keep = torch.sort(torch.argsort(a2, descending=True)[: view.budget]).values
                k2, v2, p2 = k2[keep], v2[keep], p2[keep]
            K.append(k2.to(dtype)), V.append(v2.to(dtype)), P.append(p2.clone())
        return Rewrite(tuple(K), tuple(V), tuple(P))
