"""ProbeVR: query-agnostic eviction by self-probing, weighted by value norm.

Without the question, the layer's own most recent keys stand in for future queries (keys and queries live
in the same post-RoPE space); each context token is scored by the attention these probes give it, times
the norm of its value vector, since a token with a tiny value contributes little even when attended.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ProbeVR(EvictionMethod):
    name = "probevr"
    n_probe = 32  # most recent keys used as proxy queries
    n_sink = 4  # first tokens always kept (attention sinks)

    def select(self, view: LayerView) -> Keep:
        keys = view.keys.float()
        n_heads, n, dim = keys.shape
        valid = view.valid_mask()
        probe = keys[:, -self.n_probe :, :]
        logits = torch.einsum("hpd,htd->hpt", probe, keys) / dim**0.5
        attn = logits.masked_fill(~valid[:, None, :], float("-inf")).softmax(dim=-1).mean(dim=1)
        score = attn * view.values.float().norm(dim=-1)
        score[:, : self.n_sink] = float("inf")
        score[:, -self.n_probe :] = float("inf")  # the probes themselves are the recent window
        return Keep.from_topk(score, view.budget, valid)
