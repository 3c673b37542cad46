"""Reach-gated head retention for decode-time caps (board C).

While a model reasons, a few heads keep reaching back to earlier steps and the rest read the last few lines. We
gate each KV head by its reach: the share of the newest 32 queries' attention that lands outside the first 4 tokens
and the newest 64. The third of the heads with the largest reach (at least one) are reasoning heads: they keep a
full share of the cap, ranked by attention accumulated over the whole generation (carried between calls). The
other heads keep the first 4 tokens and their newest tokens up to half the cap.
"""

import torch

from harness import EvictionMethod, Keep, LayerView

SINKS = 4
NEAR = 64
GATE_SHARE = 1 / 3


def _is_view_of_ring(x: torch.Tensor) -> bool:
    store = x.untyped_storage()
    return x.storage_offset() > 0 or store.nbytes() > x.numel() * x.element_size()


class ReachGatedRetention(EvictionMethod):
    name = "reach_gated_retention"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        newest = view.positions.masked_fill(~valid, -1).amax(dim=1, keepdim=True)
        near = (view.positions < SINKS) | (view.positions > newest - NEAR)
        if not _is_view_of_ring(view.keys):
            fresh = view.positions.float().masked_fill(view.positions < SINKS, float("inf"))
            return Keep.from_topk(fresh, view.budget, view.valid)
        read = view.group(view.attention(reduce="sum"), "mean")            # (H_kv, T)
        total = view.recall("acc") + read
        view.remember("acc", total)
        reach = (read * (~near & valid)).sum(-1) / read.sum(-1).clamp_min(1e-9)
        n_gate = max(1, int(round(GATE_SHARE * view.n_kv_heads)))
        gated = set(reach.topk(n_gate).indices.tolist())
        k = torch.tensor([view.budget if h in gated else max(SINKS + 1, view.budget // 2)
                          for h in range(view.n_kv_heads)], device=read.device)
        score = torch.where(torch.tensor([h in gated for h in range(view.n_kv_heads)],
                                         device=read.device)[:, None],
                            total, view.positions.float())
        score = score.masked_fill(view.positions < SINKS, float("inf"))
        return Keep.from_topk(score, k, view.valid)
