"""Busy keys: a key whose channels swing fast (much energy in the high frequencies of the key read across its
channels) is unusual; that share of energy is added to the closing queries' pooled attention."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class BusyKeys(EvictionMethod):
    name = "busy_keys"
    query_window = 16
    mix = 0.2

    def select(self, view: LayerView) -> Keep:
        spectrum = torch.fft.rfft(view.keys.float(), dim=-1).abs()
        cut = spectrum.shape[-1] // 2
        busy = spectrum[..., cut:].sum(dim=-1) / spectrum.sum(dim=-1).clamp_min(1e-6)
        att = view.group(view.attention().sum(dim=1), "mean")
        att = F.max_pool1d(att[:, None], kernel_size=7, stride=1, padding=3)[:, 0]
        return Keep.from_topk(att / att.sum(-1, keepdim=True) + self.mix * busy, view.budget, view.valid)
