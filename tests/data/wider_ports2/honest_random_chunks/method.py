"""Lucky chunks: the cache cut into fixed chunks, each chunk drawn a uniform random number, whole chunks kept by it;
the newest tokens always kept."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class LuckyChunks(EvictionMethod):
    name = "lucky_chunks"
    chunk = 32
    tail = 64

    def select(self, view: LayerView) -> Keep:
        h, n = view.n_kv_heads, view.n_tokens
        draws = torch.rand(h, (n + self.chunk - 1) // self.chunk)
        score = draws.repeat_interleave(self.chunk, dim=1)[:, :n]
        score[:, -self.tail:] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
