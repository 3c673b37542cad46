"""Column-and-offset retention: the closing queries' attention is read per key and per offset back from the query.
A token gets the larger of its column's rank and its offset's rank."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class ColumnOffset(EvictionMethod):
    name = "column_offset"
    query_window = 64

    def select(self, view: LayerView) -> Keep:
        att = view.attention()                       # (Hq, N, T)
        att = view.group(att, "sum")                 # (H, N, T)
        n_q, n_t = att.shape[1], att.shape[2]
        cols = att.sum(dim=1)                        # (H, T): vertical lines
        lines = torch.zeros(att.shape[0], n_t)
        for off in range(n_t):
            # the queries sit at the end: offset `off` from the last query's own position
            band = torch.diagonal(att, offset=n_t - n_q - off, dim1=1, dim2=2)
            if band.numel():
                lines[:, off] = band.sum(dim=-1)
        back = (n_t - 1) - torch.arange(n_t)          # each key's offset from the last query
        slash = lines[:, back]
        score = torch.maximum(cols / cols.amax(-1, keepdim=True), slash / slash.amax(-1, keepdim=True))
        return Keep.from_topk(score, view.budget, view.valid)
