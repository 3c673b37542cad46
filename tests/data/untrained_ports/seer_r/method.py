"""Block peaks while reasoning: at every decoding step the cache is cut into fixed blocks; a block is worth the
largest attention any of the newest queries puts on any of its tokens, and whole blocks are kept, best first."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class BlockPeaks(EvictionMethod):
    name = "block_peaks"
    query_window = 8
    width = 16

    def _tokens(self, view: LayerView) -> torch.Tensor:
        h, n, w = view.n_kv_heads, view.n_tokens, self.width
        q = view.queries.float().reshape(h, -1, view.keys.shape[-1])
        probs = torch.softmax(q @ view.keys.float().transpose(1, 2) * view.model.scale, dim=-1)
        nb = (n + w - 1) // w
        padded = torch.nn.functional.pad(probs, (0, nb * w - n))
        peak = padded.reshape(h, probs.shape[1], nb, w).amax(dim=-1).amax(dim=1)
        return peak.repeat_interleave(w, dim=-1)[:, :n]

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(self._tokens(view), view.budget, view.valid)

    def on_decode(self, view: LayerView) -> Keep:
        return Keep.from_topk(self._tokens(view), view.budget, view.valid)
