"""RaaS (Hu et al., 2025, arXiv 2502.11147), reasoning-aware attention sparsity, as decode-time eviction: every
cached token carries a timestamp, the position of the last query that attended to it strongly (here: more than a
uniform share over the keys it could see, the maximum over a KV head's query heads); a token starts with its own
position. When a layer is full the tokens with the oldest timestamps go, so 'milestone' tokens survive while
they are still used and leave once abandoned. O(T) memory per layer, no accumulated sums."""

import torch

from harness import EvictionMethod, Keep, LayerView


class RaaS(EvictionMethod):
    name = "raas"
    query_window = 64          # at least the block, so every query since the previous call is seen

    def select(self, view: LayerView) -> Keep:
        stamp = view.recall("stamp", fill=-1.0)
        stamp = torch.where(stamp < 0, view.positions.float(), stamp)
        if view.queries is not None:
            seen = view.state.get("seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                qpos = view.query_positions[fresh]
                a = view.group(view.attention(view.queries[:, fresh]), "max")        # (H_kv, n, T)
                vis = view.positions[:, None, :] <= qpos[None, :, None]
                a = a * vis
                strong = a > 1.0 / vis.sum(dim=-1, keepdim=True).clamp_min(1)
                last = torch.where(strong, qpos[None, :, None].float().expand_as(a), torch.full_like(a, -1.0))
                stamp = torch.maximum(stamp, last.amax(dim=1))
                view.state["seen"] = int(qpos.max())
        view.remember("stamp", stamp)
        return Keep.from_topk(stamp + 1e-6 * view.positions.float(), view.budget, view.valid)
