"""FastGen (Ge et al., 2023, "Model Tells You What to Discard", arXiv 2310.01801), ported to board A.

FastGen profiles every attention head once at prefill and gives it the cheapest of a ladder of structural
policies that still recovers a target share of the head's attention: special tokens only, + punctuation,
+ a local window, + frequent (heavy-hitter) tokens, or the full cache. This is my port of that hybrid policy
to the harness, with these stand-ins:
- the profile is the question span's attention (board A hands over the question's queries), averaged over a
  KV head's query heads; recovery target 0.95 of that attention;
- the harness exposes no token ids, so "special tokens" are the first 4 positions and the punctuation rung is
  dropped;
- the full cache is not allowed under a budget: the last rung is heavy hitters + local window, half the budget
  each, at the budget (a head that needs more simply gets the whole budget).
Heads keep different numbers of tokens, as in the paper.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class FastGenPort(EvictionMethod):
    name = "fastgen_port"
    question_queries = True
    n_special = 4
    target = 0.95

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        prof = view.group(view.attention(reduce="mean"), "mean")        # (H_kv, T), rows sum to ~1
        counts = view.valid_mask().sum(dim=1)
        b = view.budget
        picks = []
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            p = prof[h, :n]
            total = max(float(p.sum()), 1e-9)
            special = torch.arange(min(self.n_special, n), device=p.device)
            local_n = max(0, min(b, n) - special.numel())
            local = torch.arange(n - local_n, n, device=p.device)
            rest = p.clone()
            rest[special] = -1.0
            heavy = rest.topk(max(0, min(b, n) - special.numel())).indices
            half = max(0, (min(b, n) - special.numel()) // 2)
            rest2 = rest.clone()
            rest2[n - half:] = -1.0
            hybrid = torch.cat([special, torch.arange(n - half, n, device=p.device),
                                rest2.topk(max(0, min(b, n) - special.numel() - half)).indices])
            ladder = [special, torch.cat([special, local]), torch.cat([special, heavy]), hybrid]
            chosen = ladder[-1]
            for idx in ladder:
                idx = idx.unique()
                if idx.numel() <= b and float(p[idx].sum()) / total >= self.target:
                    chosen = idx
                    break
            picks.append(chosen.unique(sorted=True)[:b])
        return Keep(tuple(picks))
