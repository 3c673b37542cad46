"""Envelope-bound page retention (board C, decode-time eviction).

The cache is seen as pages of 16 consecutive entries. Each page is summarised by its per-channel envelope (the
largest and smallest key value in every channel); for the newest query, the envelope gives the largest logit any key
of the page could produce. Pages are kept whole in order of that bound; the page being written is always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _envelopes(k: torch.Tensor, page: int) -> tuple[torch.Tensor, torch.Tensor]:
    n, d = k.shape
    pad = (-n) % page
    hi = torch.cat([k, k.new_full((pad, d), float("-inf"))]).view(-1, page, d).amax(dim=1)
    lo = torch.cat([k, k.new_full((pad, d), float("inf"))]).view(-1, page, d).amin(dim=1)
    return hi, lo


class EnvelopeBound(EvictionMethod):
    name = "envelope_bound"
    query_window = 1
    page = 16

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        valid = view.valid_mask()
        kept = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(1)
            n = idx.numel()
            b = min(view.budget, n)
            hi, lo = _envelopes(view.keys[h, idx].float(), self.page)  # (P, D)
            q = view.queries[h * g:(h + 1) * g, -1].float()  # (g, D) newest query of each query head
            bound = torch.maximum(q[:, None, :] * hi[None], q[:, None, :] * lo[None]).sum(dim=-1).amax(dim=0)
            bound[-1] = float("inf")  # the page being written
            order = bound.argsort(descending=True)
            take = torch.zeros(n, dtype=torch.bool, device=idx.device)
            left = b
            for p in order.tolist():
                lo_i, hi_i = p * self.page, min(n, (p + 1) * self.page)
                size = hi_i - lo_i
                if size <= left:
                    take[lo_i:hi_i] = True
                    left -= size
                else:
                    take[lo_i:lo_i + left] = True
                    left = 0
                if left == 0:
                    break
            kept.append(idx[take])
        return Keep(tuple(kept))
