"""Compressive-memory pooling for a query-agnostic cache (board B_online).

A training-free port of the Compressive Transformer's memory compression (Rae, Potapenko, Jayakumar, Lillicrap,
"Compressive Transformers for Long-Range Sequence Modelling", arXiv 1911.05507, ICLR 2020). There, old memories
are not discarded but squeezed by a compression function with rate c into a compressed memory; among the
functions the paper compares, mean pooling over c consecutive memories needs no training, and that is the one
used here.

Per KV head the cache keeps, uncompressed, four opening tokens and the newest half of the budget (the "memory");
everything between them is cut into consecutive groups of c tokens (c = span / free slots, so groups differ
by at most one token), and each group becomes one entry: the mean of its values, and the mean of its keys taken
without the rotary embedding and re-rotated at the group's mean position (averaging rotated keys of different
positions would blur them). The result is a Rewrite with exactly the budgeted number of entries.

Deviations from the paper: keys and values are pooled directly (the paper compresses stored activations);
no trained compression network or auxiliary reconstruction loss (the parameter-free
mean-pooling variant only); the rate is set from the budget rather than fixed; the four opening tokens are kept
raw (attention sinks, StreamingLLM, arXiv 2309.17453), which the paper has no need for.
"""

import torch

from harness import EvictionMethod, Keep, LayerView, Rewrite


class CompressiveMemory(EvictionMethod):
    name = "compressive_memory"
    opening = 4
    memory_share = 0.5

    def _rot(self, view: LayerView, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        try:
            return view.rotate(x, pos)
        except ValueError:
            return x.float()

    def select(self, view: LayerView) -> Keep | Rewrite:
        n, b = view.n_tokens, view.budget
        if b >= n or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        lo = min(self.opening, b)
        mem = min(b - lo, max(1, int(b * self.memory_share)))
        slots = b - lo - mem
        hi = n - mem
        if slots <= 0 or hi - lo <= slots:
            return Keep.from_topk(torch.where(view.positions < lo, 1e9, 0.0) + view.positions.float(), b)
        span = hi - lo
        groups = slots  # consecutive groups of floor or ceil(span / slots) tokens: the rate that fills the budget
        member = torch.div(torch.arange(span, device=view.keys.device) * groups, span, rounding_mode="floor")
        count = torch.bincount(member, minlength=groups).float()
        out_k, out_v, out_p = [], [], []
        for h in range(view.n_kv_heads):
            pos = view.positions[h]
            raw = self._rot(view, view.keys[h, lo:hi].float(), -pos[lo:hi])
            ksum = torch.zeros(groups, raw.shape[1], device=raw.device).index_add_(0, member, raw)
            vsum = torch.zeros(groups, raw.shape[1], device=raw.device).index_add_(0, member,
                                                                                   view.values[h, lo:hi].float())
            psum = torch.zeros(groups, device=raw.device).index_add_(0, member, pos[lo:hi].float())
            gpos = (psum / count).round().long()
            gk = self._rot(view, ksum / count[:, None], gpos)
            gv = vsum / count[:, None]
            out_k.append(torch.cat([view.keys[h, :lo].float(), gk, view.keys[h, hi:].float()]).to(view.keys.dtype))
            out_v.append(torch.cat([view.values[h, :lo].float(), gv, view.values[h, hi:].float()]).to(view.values.dtype))
            out_p.append(torch.cat([pos[:lo], gpos, pos[hi:]]).long())
        return Rewrite(tuple(out_k), tuple(out_v), tuple(out_p))
