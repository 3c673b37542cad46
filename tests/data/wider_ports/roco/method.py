"""Fair share: a token's weight is the attention it got per query that could see it (an old token is not
favoured for having been seen more often), and a steadier token wins a tie: the spread of that attention."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class FairShare(EvictionMethod):
    name = "fair_share"
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        h, n = view.n_kv_heads, view.n_tokens
        qs = view.queries.float().reshape(h, -1, view.keys.shape[-1])
        w = qs.shape[1]
        logits = torch.einsum("hwd,hnd->hwn", qs, view.keys.float()) * view.model.scale
        qpos = torch.arange(n - w, n)
        visible = torch.arange(n)[None, :] <= qpos[:, None]
        probs = logits.masked_fill(~visible, float("-inf")).softmax(dim=-1)
        seen = visible.sum(dim=0).clamp_min(1)
        mean = probs.sum(dim=1) / seen
        spread = probs.std(dim=1)
        return Keep.from_topk(mean + 1e-3 * spread, view.budget, view.valid)
