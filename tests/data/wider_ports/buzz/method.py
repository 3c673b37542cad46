"""Comb cells: a running tally of the attention every token has received; the older part of the cache is cut into
cells and each cell keeps its own best tokens, beside the first tokens and the newest stretch."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class CombCells(EvictionMethod):
    name = "comb_cells"
    query_window = 16
    cell = 32
    lead = 4
    tail = 64

    def setup(self, model):
        self.store = None

    def _tally(self, view: LayerView) -> torch.Tensor:
        h = view.n_kv_heads
        q = view.queries.float().reshape(h, -1, view.keys.shape[-1])
        att = torch.softmax(q @ view.keys.float().transpose(1, 2) * view.model.scale, dim=-1)
        got = att.sum(dim=1)
        prev = self.store
        if prev is not None and prev.shape == got.shape:
            got = got + prev
        self.store = got
        return got

    def _pick(self, view: LayerView) -> Keep:
        tally = self._tally(view)
        n = tally.shape[-1]
        score = torch.full_like(tally, -1.0)
        score[:, : self.lead] = float("inf")
        score[:, n - self.tail:] = float("inf")
        per = max(1, view.budget // max(1, (n - self.tail) // self.cell + 1))
        for start in range(self.lead, n - self.tail, self.cell):
            part = tally[:, start: start + self.cell]
            top = part.topk(min(per, part.shape[-1]), dim=-1).indices + start
            score.scatter_(1, top, tally.gather(1, top))
        return Keep.from_topk(score, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        return self._pick(view)

    def on_decode(self, view: LayerView) -> Keep:
        return self._pick(view)
