"""Reach-split caching (board B_online): heads that read far back keep a real, attention-ranked cache; heads that
only read nearby keep their first tokens and a recent stretch, plus one summary entry that stands in for
everything they let go."""

import torch

from harness import EvictionMethod, LayerView, Rewrite


def _reach(view: LayerView, local: int, head_room: int) -> torch.Tensor:
    """(H_kv,) share of the closing queries' attention that lands beyond their local neighbourhood (sinks aside)."""
    attn = view.attention()                                         # (H_q, N, T)
    qpos = view.query_positions
    far = (view.positions[:, None, :] < (qpos[None, :, None] - local)) & (view.positions[:, None, :] >= head_room)
    g = view.model.group_size
    mass = attn.view(view.n_kv_heads, g, attn.shape[1], attn.shape[2])
    return (mass * far[:, None]).sum(dim=(-1, -2)).mean(dim=1) / attn.shape[1]


class ReachSplitCache(EvictionMethod):
    name = "reach_split_cache"
    query_window = 32
    far_fraction = 0.15       # share of the layer's heads treated as far readers (at least one)
    local_span = 64
    n_first = 4

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        h_kv = view.n_kv_heads
        counts = [int(c) for c in valid.sum(dim=1)]
        total = view.budget * h_kv
        if view.queries is None or view.budget >= max(counts):
            reach = torch.zeros(h_kv, device=view.keys.device)
        else:
            reach = _reach(view, self.local_span, self.n_first)
        n_far = max(1, round(self.far_fraction * h_kv))
        far_heads = set(reach.topk(n_far).indices.tolist())
        near_budget = max(self.n_first + 2, view.budget // 2)
        near_budget = min(near_budget, view.budget)
        plan = {}
        spent = 0
        for h in range(h_kv):
            if h not in far_heads:
                plan[h] = min(near_budget, counts[h])
                spent += plan[h]
        left = total - spent
        for i, h in enumerate(sorted(far_heads)):
            share = left // (len(far_heads) - i)
            plan[h] = min(share, counts[h])
            left -= plan[h]
        if view.queries is not None and view.budget < max(counts):
            col = view.group(view.attention().sum(dim=1), "mean")          # (H_kv, T)
        else:
            col = view.positions.float()
        tail_start = int(view.query_positions.min()) if view.query_positions is not None else None
        keys, vals, poss = [], [], []
        for h in range(h_kv):
            idx = torch.nonzero(valid[h]).flatten()
            n, b = idx.numel(), plan[h]
            if b >= n:
                chosen = idx
                keys.append(view.keys[h, chosen])
                vals.append(view.values[h, chosen])
                poss.append(view.positions[h, chosen])
                continue
            if h in far_heads:
                s = col[h, idx].clone()
                if tail_start is not None:
                    s[view.positions[h, idx] >= tail_start] = float("inf")
                chosen = idx[s.topk(b).indices.sort().values]
                keys.append(view.keys[h, chosen])
                vals.append(view.values[h, chosen])
                poss.append(view.positions[h, chosen])
                continue
            if b < self.n_first + 2:  # too small for a summary: the newest b tokens
                chosen = idx[n - b:]
                keys.append(view.keys[h, chosen])
                vals.append(view.values[h, chosen])
                poss.append(view.positions[h, chosen])
                continue
            # near reader: first tokens + a recent stretch + one summary of what is let go
            first = idx[: self.n_first]
            recent = idx[n - (b - self.n_first - 1):] if b - self.n_first - 1 > 0 else idx[:0]
            mask = torch.ones(n, dtype=torch.bool, device=idx.device)
            mask[: self.n_first] = False
            mask[n - recent.numel():] = False
            gone = idx[mask]
            sk = view.keys[h, gone].float().mean(dim=0, keepdim=True)
            sv = view.values[h, gone].float().mean(dim=0, keepdim=True)
            sp = view.positions[h, gone].max().view(1)
            keys.append(torch.cat([view.keys[h, first], sk.to(view.keys.dtype), view.keys[h, recent]]))
            vals.append(torch.cat([view.values[h, first], sv.to(view.values.dtype), view.values[h, recent]]))
            poss.append(torch.cat([view.positions[h, first], sp, view.positions[h, recent]]))
        return Rewrite(tuple(keys), tuple(vals), tuple(poss))
