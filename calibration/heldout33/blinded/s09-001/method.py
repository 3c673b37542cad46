"""Fading Ledger: a running ledger of attention in which every generated step discounts the past."""

import torch

from harness import EvictionMethod, Keep, LayerView


class FadingLedger(EvictionMethod):
    name = "fading_ledger"
    query_window = 512
    keep_rate = 0.985
    fresh_keep = 16

    def select(self, view: LayerView) -> Keep:
        book = view.recall("ledger")
        m = view.valid_mask()
        if view.queries is not None:
            mark = view.state.get("mark", -1)
            sel = view.query_positions > mark
            if bool(sel.any()):
                att = view.attention()[:, sel]                           # (Hq, n, T)
                qp = view.query_positions[sel].to(torch.float64)
                lag = (qp.max() - qp).to(att.dtype)                         # steps until the newest query
                w = self.keep_rate ** lag                                   # older steps count less
                book = book * (self.keep_rate ** float(sel.sum())) + view.group(torch.einsum("hnt,n->ht", att, w), "sum")
                view.state["mark"] = int(view.query_positions.max())
        view.remember("ledger", book)
        p = view.positions.masked_fill(~m, -1)
        fresh = (p > p.max(1, keepdim=True).values - self.fresh_keep) & m
        return Keep.from_topk(book.masked_fill(fresh, float("inf")), view.budget, view.valid)
