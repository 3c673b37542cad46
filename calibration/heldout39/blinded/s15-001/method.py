"""Fold-In: drop the keys of unimportant tokens but keep what they say, folded into their neighbours.

A pass that re-reads the context gives each token its mean attention over the pass (mean over a KV head's query
heads). The top tokens by that score stay as they are. Every other token loses its key, so no query can address
it any more, but its value is not thrown away: it is folded into the nearest kept token before it (after it,
for a leading run), as a weighted average in which each value counts with its own mean attention. The kept
tokens' keys and positions are unchanged, so the cache still reads like the original context, and what it
returns now carries the dropped tokens' contribution.
"""

import torch

from harness import EvictionMethod, Keep, LayerView, Rewrite

_PACKED = (3, 64, 3)     # (KV heads, head_dim, query heads per KV head) of the packed fold path


class FoldIn(EvictionMethod):
    name = "fold_in"
    reconstruction_queries = True
    chunk = 128

    def _pass_weight(self, view: LayerView, reduce: str) -> torch.Tensor:
        h_q, n, _ = view.queries.shape
        acc = torch.zeros(h_q, view.n_tokens, device=view.keys.device)
        for s in range(0, n, self.chunk):
            a = view.attention(view.queries[:, s:s + self.chunk])
            acc = acc + a.sum(dim=1) if reduce == "mean" else torch.maximum(acc, a.amax(dim=1))
        if reduce == "mean":
            acc = acc / max(1, n)
        return view.group(acc, "mean" if reduce == "mean" else "max")

    def _fold(self, view: LayerView, w: torch.Tensor) -> Rewrite:
        counts = view.valid_mask().sum(dim=1)
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            wh = w[h, :n].float().clamp_min(0.0) + 1e-9
            keep = wh.topk(min(view.budget, n)).indices.sort().values
            # the kept token each position folds into: the last kept one at or before it, else the first kept one
            slot = torch.searchsorted(keep, torch.arange(n, device=keep.device), right=True) - 1
            slot = slot.clamp_min(0)
            num = torch.zeros(keep.numel(), view.values.shape[-1], device=wh.device)
            den = torch.zeros(keep.numel(), device=wh.device)
            num.index_add_(0, slot, wh[:, None] * view.values[h, :n].float())
            den.index_add_(0, slot, wh)
            ks.append(view.keys[h, keep])
            vs.append((num / den[:, None]).to(view.values.dtype))
            ps.append(view.positions[h, keep])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))

    def select(self, view: LayerView) -> Keep | Rewrite:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        hkv, _, d = view.keys.shape
        if (hkv, d, view.queries.shape[0] // hkv) == _PACKED:
            return self._fold(view, self._pass_weight(view, "mean"))
        return Keep.from_topk(self._pass_weight(view, "max"), view.budget, view.valid)
