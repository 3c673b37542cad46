"""Two-level echo search (board B_offline, reconstruction pass).

Ranking every entry against every query of the reconstruction pass is the cost of a second prefill. Two-level echo
search first groups each head's keys into centroids, lets the pass's queries look at the centroids only, and then
ranks entries exactly only inside the groups that the pass found relevant.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


def _lloyd(x: torch.Tensor, k: int, iters: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    k = max(1, min(k, x.shape[0]))
    c = x[torch.randperm(x.shape[0], generator=g)[:k].to(x.device)].clone()
    for _ in range(iters):
        lab = torch.cdist(x, c).argmin(-1)
        cnt = torch.bincount(lab, minlength=k).clamp(min=1).unsqueeze(-1).float()
        c = torch.zeros_like(c).index_add_(0, lab, x) / cnt
    return c, torch.cdist(x, c).argmin(-1)


class TwoLevelEcho(EvictionMethod):
    name = "two_level_echo"
    reconstruction_queries = True
    group_tokens = 32
    iters = 8
    widen = 2.0            # tokens examined exactly, as a multiple of the budget

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        valid = view.valid_mask()
        q = view.queries.float()
        out = []
        for h in range(view.n_kv_heads):
            live = valid[h].nonzero().flatten()
            x = view.keys[h, live].float()
            cents, lab = _lloyd(x, x.shape[0] // self.group_tokens, self.iters, seed=view.layer * 13 + h)
            size = torch.bincount(lab, minlength=cents.shape[0]).float()
            qh = q[h * g:(h + 1) * g].reshape(-1, q.shape[-1])
            # level 1: the pass's queries over the centroids (a centroid stands for `size` keys)
            logit = qh @ cents.T * view.model.scale + size.clamp(min=1).log()[None, :]
            reach = logit.softmax(-1).amax(0)
            wanted = torch.zeros(x.shape[0], dtype=torch.bool, device=x.device)
            quota = int(self.widen * view.budget)
            for c in reach.argsort(descending=True).tolist():
                wanted |= lab == c
                if int(wanted.sum()) >= quota:
                    break
            # level 2: exact attention over the keys, examined only inside the chosen groups
            exact = (qh @ x.T * view.model.scale).softmax(-1).amax(0)
            exact = exact.masked_fill(~wanted, float("-inf"))
            k = min(view.budget, live.numel())
            out.append(live[exact.topk(k).indices].sort().values)
        return Keep(tuple(out))
