"""Bottom-up key agglomeration (board B_offline, query-agnostic; Rewrite).

Rather than deciding which entries to drop, we let the cache summarise itself: the context's entries are grouped
bottom-up, the two closest groups merged at every step, until exactly as many groups remain as the layer may
hold, and each group becomes one entry. Because B_offline allows a slow one-off pass, the grouping can afford to
be exhaustive within blocks of 256 entries (each block gets a share of the groups proportional to its size). Four
opening entries and the closing 16 are left as they are. A merged entry sits at its newest member's position.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


def _agglomerate(x: torch.Tensor, n_groups: int) -> torch.Tensor:
    """Group labels (n,) for the rows of x, merging the closest pair (mean pairwise cosine distance) each step."""
    n = x.shape[0]
    label = torch.arange(n)
    if n_groups >= n:
        return label
    u = F.normalize(x.float(), dim=-1)
    dist = 1.0 - u @ u.T
    dist.fill_diagonal_(float("inf"))
    size = torch.ones(n)
    alive = torch.ones(n, dtype=torch.bool)
    for _ in range(n - max(1, n_groups)):
        flat = int(dist.argmin())
        i, j = divmod(flat, n)
        if i > j:
            i, j = j, i
        # Lance-Williams update for the mean pairwise distance
        merged = (size[i] * dist[i] + size[j] * dist[j]) / (size[i] + size[j])
        dist[i], dist[:, i] = merged, merged
        dist[i, i] = float("inf")
        dist[j], dist[:, j] = float("inf"), float("inf")
        size[i] += size[j]
        alive[j] = False
        label[label == j] = i
    return label


class KeyAgglomeration(EvictionMethod):
    name = "key_agglomeration"
    block = 256
    n_open = 4
    n_close = 16

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            ok = valid[h]
            k, v, p = view.keys[h][ok].float(), view.values[h][ok].float(), view.positions[h][ok]
            n = k.shape[0]
            b = min(view.budget, n)
            if b >= n:
                ks.append(k); vs.append(v); ps.append(p)
                continue
            o = min(self.n_open, b // 8)
            c = min(self.n_close, b // 4)
            mid = torch.arange(o, n - c)
            room = b - o - c
            pieces_k, pieces_v, pieces_p = [k[:o]], [v[:o]], [p[:o]]
            starts = list(range(0, mid.numel(), self.block))
            sizes = [min(self.block, mid.numel() - s) for s in starts]
            quota = [int(room * z / max(1, mid.numel())) for z in sizes]
            for i in sorted(range(len(quota)), key=lambda i: -sizes[i])[: room - sum(quota)]:
                quota[i] += 1
            for s, z, qk in zip(starts, sizes, quota):
                if qk <= 0:
                    continue
                idx = mid[s:s + z]
                lab = _agglomerate(k[idx], qk)
                groups = lab.unique()
                onehot = (lab[None, :] == groups[:, None]).float()
                cnt = onehot.sum(1, keepdim=True)
                pieces_k.append(onehot @ k[idx] / cnt)
                pieces_v.append(onehot @ v[idx] / cnt)
                pieces_p.append((onehot * p[idx][None, :].float()).amax(1).long())
            pieces_k.append(k[n - c:]); pieces_v.append(v[n - c:]); pieces_p.append(p[n - c:])
            kk, vv, pp = torch.cat(pieces_k), torch.cat(pieces_v), torch.cat(pieces_p)
            order = pp.argsort()
            ks.append(kk[order]); vs.append(vv[order]); ps.append(pp[order])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
