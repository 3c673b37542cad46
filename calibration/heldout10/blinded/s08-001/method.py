"""Stable-norm paging (board A).

Tokens whose value carries a lot relative to how loudly their key shouts are the ones an attention read-out
depends on; tokens with a large key and a small value mostly absorb attention and give little back. We rate each
token by the ratio of its value norm to its key norm and evict in whole pages of 32 tokens, so the kept cache stays
page-aligned (no fragmentation, no gather inside a page). No attention is computed at all.

Pages are rated by the mean ratio of their tokens, averaged over KV heads; the best pages are kept whole and the
same pages in every head. The budget left over after whole pages goes to the opening tokens.
"""

import torch

from harness import EvictionMethod, Keep, LayerView

PAGE = 32


class StableNormPaging(EvictionMethod):
    name = "stable_norm_paging"

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.budget >= t or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        ratio = view.values.float().norm(dim=-1) / view.keys.float().norm(dim=-1).clamp_min(1e-6)   # (H_kv, T)
        ratio = ratio.mean(dim=0)
        n_pages = (t + PAGE - 1) // PAGE
        padded = torch.zeros(n_pages * PAGE, device=ratio.device)
        padded[:t] = ratio
        count = torch.zeros(n_pages * PAGE, device=ratio.device)
        count[:t] = 1.0
        page_score = padded.view(n_pages, PAGE).sum(1) / count.view(n_pages, PAGE).sum(1)
        whole = view.budget // PAGE
        keep = torch.zeros(t, dtype=torch.bool, device=ratio.device)
        if whole > 0:
            best = page_score.topk(min(whole, n_pages)).indices
            for p in best.tolist():
                keep[p * PAGE: min(t, (p + 1) * PAGE)] = True
        spare = view.budget - int(keep.sum())
        free = (~keep).nonzero().flatten()[:max(0, spare)]
        keep[free] = True
        idx = keep.nonzero().flatten()
        return Keep.same_for_all_heads(idx, view.n_kv_heads)
