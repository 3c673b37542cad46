"""Running tally: attention received summed over every decoding call, plus the newest tokens; one global ranking."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class Tally(EvictionMethod):
    name = "tally"
    query_window = 16
    tail = 64

    def setup(self, model):
        self.store = None

    def _pick(self, view: LayerView) -> Keep:
        h = view.n_kv_heads
        q = view.queries.float().reshape(h, -1, view.keys.shape[-1])
        got = torch.softmax(q @ view.keys.float().transpose(1, 2) * view.model.scale, dim=-1).sum(dim=1)
        prev = self.store
        if prev is not None and prev.shape == got.shape:
            got = got + prev
        self.store = got
        score = got.clone()
        score[:, got.shape[-1] - self.tail:] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        return self._pick(view)

    def on_decode(self, view: LayerView) -> Keep:
        return self._pick(view)
