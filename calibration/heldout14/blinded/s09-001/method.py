"""Run-fold compaction (board B_online, query-agnostic; Rewrite).

Long contexts are full of runs: stretches where consecutive keys barely change (boilerplate, lists, repeated
formatting). Such a run is one piece of information stored many times. We first fold every run of consecutive
entries whose key-to-key cosine stays above a threshold into one entry (mean key, mean value, the run's first
position), and only then, if the folded layer is still over its share, drop the weakest folded entries by the
attention the closing window pays their members. The closing window is kept as is.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class RunFoldCompaction(EvictionMethod):
    name = "run_fold_compaction"
    query_window = 32
    fold_cos = 0.85

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        keys, vals, poss = [], [], []
        have_q = view.queries is not None
        mass = view.group(view.attention(reduce="sum"), "mean") if have_q else view.positions.float()
        edge = int(view.query_positions.min()) if have_q else int(view.positions.max()) + 1
        for h in range(view.n_kv_heads):
            ok = valid[h]
            k, v, p, m = view.keys[h][ok].float(), view.values[h][ok].float(), view.positions[h][ok], mass[h][ok]
            n = k.shape[0]
            b = min(view.budget, n)
            if b >= n:
                keys.append(k); vals.append(v); poss.append(p)
                continue
            tail = p >= edge
            if int(tail.sum()) > b // 2:
                tail = p > int(p.max()) - b // 4
            body = (~tail).nonzero().flatten()
            kb = k[body]
            link = F.cosine_similarity(kb[1:], kb[:-1], dim=-1) > self.fold_cos
            run_id = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum((~link).long(), 0)])
            n_runs = int(run_id[-1]) + 1 if body.numel() else 0
            cnt = torch.zeros(n_runs).index_add_(0, run_id, torch.ones(body.numel()))
            fk = torch.zeros(n_runs, k.shape[1]).index_add_(0, run_id, kb) / cnt[:, None]
            fv = torch.zeros(n_runs, v.shape[1]).index_add_(0, run_id, v[body]) / cnt[:, None]
            fm = torch.zeros(n_runs).index_add_(0, run_id, m[body].float())
            first = torch.full((n_runs,), -1, dtype=torch.long)
            first = first.scatter_reduce(0, run_id, p[body], reduce="amin", include_self=False)
            room = b - int(tail.sum())
            if n_runs > room:
                top = fm.topk(room).indices.sort().values
                fk, fv, first = fk[top], fv[top], first[top]
            keys.append(torch.cat([fk, k[tail]]))
            vals.append(torch.cat([fv, v[tail]]))
            poss.append(torch.cat([first, p[tail]]))
        return Rewrite(tuple(keys), tuple(vals), tuple(poss))
