"""Quiet blocks: the key norm (low is good) averaged over fixed blocks, whole blocks kept."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class QuietBlocks(EvictionMethod):
    name = "quiet_blocks"
    width = 16

    def select(self, view: LayerView) -> Keep:
        norm = view.keys.float().norm(dim=-1)
        h, n = norm.shape
        nb = (n + self.width - 1) // self.width
        padded = torch.nn.functional.pad(norm, (0, nb * self.width - n))
        block = padded.reshape(h, nb, self.width).mean(dim=-1)
        return Keep.from_topk(-block.repeat_interleave(self.width, dim=-1)[:, :n], view.budget, view.valid)
