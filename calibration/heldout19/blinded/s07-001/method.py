"""Passage-granular retention (board B_offline).

Facts live in short passages, not in isolated tokens. After the offline repeat pass every token gets its peak
read-out during the re-reading; the context is cut into passages of ten tokens, a passage's worth is the sum of its
tokens' peaks, and whole passages are kept best-first. Any budget left after the last whole passage goes to the
best single tokens outside the kept passages.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class PassageGranular(EvictionMethod):
    name = "passage_granular"
    reconstruction_queries = True
    passage = 10

    def _peaks(self, view: LayerView) -> torch.Tensor:
        peak = view.attention(reduce="max")  # (H_q, T): the re-reading is after the context, no causal mask
        return view.group(peak, "max")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        peaks = self._peaks(view)
        valid = view.valid_mask()
        kept = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(1)
            tok = peaks[h, idx]
            n = tok.numel()
            pad = (-n) % self.passage
            padded = torch.cat([tok, tok.new_zeros(pad)]).view(-1, self.passage)
            worth = padded.sum(dim=1)
            whole = min(view.budget // self.passage, worth.numel())
            best = worth.topk(whole).indices
            take = torch.zeros(n + pad, dtype=torch.bool, device=tok.device)
            take.view(-1, self.passage)[best] = True
            take = take[:n]
            spare = min(view.budget, n) - int(take.sum())
            if spare > 0:
                rest = tok.masked_fill(take, float("-inf"))
                take[rest.topk(spare).indices] = True
            while int(take.sum()) > view.budget:  # a partial last passage can overshoot
                cand = tok.masked_fill(~take, float("inf"))
                take[cand.argmin()] = False
            kept.append(idx[take])
        return Keep(tuple(kept))
