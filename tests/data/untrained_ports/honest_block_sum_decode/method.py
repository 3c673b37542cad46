"""Chunk mass while decoding: the newest queries' attention summed over each fixed chunk of the cache, refreshed at
every decoding step; whole chunks kept, heaviest first, and the first tokens always."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class ChunkMassDecode(EvictionMethod):
    name = "chunk_mass_decode"
    query_window = 8
    width = 16

    def _tokens(self, view: LayerView) -> torch.Tensor:
        h, n, w = view.n_kv_heads, view.n_tokens, self.width
        q = view.queries.float().reshape(h, -1, view.keys.shape[-1])
        probs = torch.softmax(q @ view.keys.float().transpose(1, 2) * view.model.scale, dim=-1).sum(1)
        nb = (n + w - 1) // w
        mass = torch.nn.functional.pad(probs, (0, nb * w - n)).reshape(h, nb, w).sum(-1)
        s = mass.repeat_interleave(w, dim=-1)[:, :n]
        s[:, :4] = float("inf")
        return s

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(self._tokens(view), view.budget, view.valid)

    def on_decode(self, view: LayerView) -> Keep:
        return Keep.from_topk(self._tokens(view), view.budget, view.valid)
