import torch

from harness.api import EvictionMethod, Keep, LayerView


class Ledger(EvictionMethod):
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(view.positions.float(), view.budget, view.valid)

    def on_decode(self, view: LayerView) -> Keep:
        got = view.group(view.attention(reduce="sum"), "mean")
        total = view.recall("tally") + got
        view.remember("tally", total)
        s = total.clone()
        s[:, :4] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
