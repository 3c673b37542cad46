"""Last Touch: a least-recently-used cache for decode-time eviction, where "used" means "noticeably attended".

At each cap, every decoding step since the previous call marks the tokens it attended above an even share
(1 / number of visible tokens) in any query head of the KV head's group; a token's stamp is the position of
the latest step that marked it (a new token starts with its own position). The tokens with the oldest stamps
go first, as in an LRU page cache. Builds on H2O (Zhang et al., 2023), which uses the attention received as
the sign of use but sums it, and StreamingLLM (Xiao et al., 2023), whose first four tokens are kept outright.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class LastTouch(EvictionMethod):
    name = "last_touch"
    query_window = 64
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        pos = view.positions
        stamp = view.recall("touch", fill=-1.0)
        stamp = torch.where(stamp < 0, pos.float(), stamp)
        if view.queries is not None:
            seen = view.state.get("touch_seen", -1)
            fresh = (view.query_positions > seen).nonzero().flatten()
            if fresh.numel():
                a = view.group(view.attention()[:, fresh], "max")                  # (H_kv, F, T)
                qp = view.query_positions[fresh]
                vis = (pos[:, None, :] <= qp[None, :, None]) & valid[:, None, :]
                even = 1.0 / vis.sum(-1, keepdim=True).clamp_min(1)
                marked = (a > even) & vis
                latest = torch.where(marked, qp.float()[None, :, None], torch.full_like(a, -1.0)).amax(dim=1)
                stamp = torch.maximum(stamp, latest)
                view.state["touch_seen"] = int(view.query_positions.max())
        view.remember("touch", stamp)
        score = stamp + pos.float() * 1e-6                     # ties: the newer token stays
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            score[h, :min(self.sinks, int(counts[h]))] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
