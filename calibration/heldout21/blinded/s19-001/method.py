"""Sheet eviction (board B_online, query-agnostic prefill).

The cache is managed in sheets of 16 consecutive slots per KV head. Each sheet is worth the attention its slots
received from the context's last 32 rows (summed over rows and over the head's query heads); whole sheets are
kept, best first, and the sheet holding the newest tokens always stays. Slots left over after whole sheets go to the
newest tokens not yet kept. Evicting whole sheets keeps the cache contiguous, so a paged allocator can free memory
sheet by sheet.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SheetEviction(EvictionMethod):
    name = "sheet_eviction"
    query_window = 32
    sheet = 16

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention(reduce="sum"), "sum")        # (H_kv, T)
        mask = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            n = int(mask[h].sum())
            pages = -(-n // self.sheet)
            padded = torch.zeros(pages * self.sheet, device=att.device)
            padded[:n] = att[h, :n]
            worth = padded.view(pages, self.sheet).sum(1)
            worth[-1] = float("inf")                                  # the newest sheet stays
            take = min(view.budget // self.sheet, pages)
            chosen = worth.topk(take).indices
            slot = (chosen[:, None] * self.sheet + torch.arange(self.sheet, device=att.device)).flatten()
            slot = slot[slot < n]
            keep = torch.zeros(n, dtype=torch.bool, device=att.device)
            keep[slot] = True
            spare = view.budget - int(keep.sum())
            if spare > 0:
                rest = (~keep).nonzero().flatten()
                keep[rest[-spare:]] = True
            out.append(keep.nonzero().flatten())
        return Keep(tuple(out))
