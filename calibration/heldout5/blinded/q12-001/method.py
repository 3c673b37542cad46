"""WeightedKV (Yuan et al., ICASSP 2025, arXiv 2503.01330), ported to the harness (board B_online).

WeightedKV keeps the keys of the important tokens only, but does not throw the values of the others away: each
discarded token's value is merged into its nearest retained neighbour with a weighted average whose weights are
the tokens' average attention scores. Importance is the average attention the observation window (the last 32
context queries) pays each token, averaged over the query heads of a KV head; the window is always kept. A
discarded token is merged into the next retained token after it (the last retained token for a trailing run),
as in the paper's sequential merging; keys and positions of the retained tokens are unchanged.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite


class WeightedKV(EvictionMethod):
    name = "weightedkv"
    query_window = 32

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        dtype = view.keys.dtype
        if view.queries is not None:
            avg = view.group(view.attention(reduce="mean"), "mean")          # (H_kv, T)
        else:
            avg = torch.ones(view.keys.shape[:2], device=view.keys.device)
        w0 = int(view.query_positions.min()) if view.query_positions is not None else 1 << 62
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            keys, vals, pos = view.keys[h, idx], view.values[h, idx].float(), view.positions[h, idx]
            a = avg[h, idx].float()
            n = idx.numel()
            if view.budget >= n:
                ks.append(keys.clone()), vs.append(vals.to(dtype)), ps.append(pos.clone())
                continue
            score = a.masked_fill(pos >= w0, float("inf"))
            kept = score.topk(view.budget).indices.sort().values
            # the retained token each token merges into: the first retained at or after it, else the last
            slot = torch.searchsorted(kept, torch.arange(n, device=kept.device))
            slot = slot.clamp(max=kept.numel() - 1)
            wt = a.clamp_min(1e-12)
            num = torch.zeros(kept.numel(), vals.shape[-1], device=vals.device).index_add_(0, slot, wt[:, None] * vals)
            den = torch.zeros(kept.numel(), device=vals.device).index_add_(0, slot, wt)
            merged = num / den[:, None]
            ks.append(keys[kept].clone()), vs.append(merged.to(dtype)), ps.append(pos[kept].clone())
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
