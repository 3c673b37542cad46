"""StreamingLLM (Xiao et al., 2023, arXiv 2309.17453): keep the first ``n_sink`` tokens (attention sinks) and
the most recent ones; no scoring. Official default start_size 4. The harness keeps keys post-RoPE and
positions unchanged (no pos-shift), as kvpress's StreamingLLMPress does."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class StreamingLLM(EvictionMethod):
    name = "window"
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            b = min(view.budget, idx.numel())
            sinks = idx[: min(self.n_sink, b)]
            recent = idx[idx.numel() - (b - sinks.numel()) :] if b > sinks.numel() else idx[:0]
            out.append(torch.cat([sinks, recent]))
        return Keep(tuple(out))
