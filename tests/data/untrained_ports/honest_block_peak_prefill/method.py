"""Critical blocks once: after prefill, each block of the context is worth the largest attention the closing
queries put on any of its tokens; whole blocks kept, once, before generation."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class CriticalBlocks(EvictionMethod):
    name = "critical_blocks"
    query_window = 32
    width = 32

    def select(self, view: LayerView) -> Keep:
        h, n, w = view.n_kv_heads, view.n_tokens, self.width
        q = view.queries.float().reshape(h, -1, view.keys.shape[-1])
        probs = torch.softmax(q @ view.keys.float().transpose(1, 2) * view.model.scale, dim=-1)
        nb = (n + w - 1) // w
        peak = torch.nn.functional.pad(probs, (0, nb * w - n)).reshape(h, -1, nb, w).amax(dim=-1).amax(dim=1)
        return Keep.from_topk(peak.repeat_interleave(w, dim=-1)[:, :n], view.budget, view.valid)
