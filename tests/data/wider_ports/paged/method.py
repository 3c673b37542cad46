"""Sheets: the cache is a stack of fixed sheets; a token's worth is how long its value is against how long its key
is, a sheet's worth the mean over its tokens, and the weakest whole sheets go."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class Sheets(EvictionMethod):
    name = "sheets"
    sheet = 16

    def select(self, view: LayerView) -> Keep:
        vlen = torch.linalg.vector_norm(view.values.float(), dim=-1)
        klen = torch.linalg.vector_norm(view.keys.float(), dim=-1)
        worth = vlen / (klen + 1e-6)
        h, n = worth.shape
        whole = (n + self.sheet - 1) // self.sheet
        padded = torch.cat([worth, worth.new_zeros(h, whole * self.sheet - n)], dim=1)
        per_sheet = padded.view(h, whole, self.sheet).mean(dim=2)
        spread = per_sheet.repeat_interleave(self.sheet, dim=1)[:, :n]
        return Keep.from_topk(spread, view.budget, view.valid)
