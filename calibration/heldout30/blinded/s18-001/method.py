"""Last Seen: a decode-time cache ordered by when each token was last really looked at.

Each cached token carries a stamp: the position of the latest query that paid it a real look, at least 2 % of
its attention in some query head of the KV head's group. A token enters with its own position as its stamp (it
has just been written). Every query since the previous call (the newest 64 are handed over) renews the stamps of
the tokens it looks at. When a layer reaches its cap, the tokens with the oldest stamps leave first, ties broken
toward the newer token; the first 4 tokens always stay. Stamps travel with the tokens from call to call.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class LastSeen(EvictionMethod):
    name = "last_seen"
    query_window = 64
    look = 0.02
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        stamp = view.recall("stamp", fill=-1.0)
        pos = view.positions.float()
        stamp = torch.where(stamp < 0, pos, stamp)
        if view.queries is not None and view.query_positions is not None:
            new = view.query_positions > view.state.get("stamped_to", -1)
            if bool(new.any()):
                attn = view.attention()[:, new]                                   # (H_q, m, T), causal
                strongest = view.group(attn, "max")                                # (H_kv, m, T)
                when = view.query_positions[new].float().to(attn.device)
                renewed = torch.where(strongest >= self.look, when[None, :, None], torch.full_like(strongest, -1.0))
                stamp = torch.maximum(stamp, renewed.amax(dim=1))
                view.state["stamped_to"] = int(view.query_positions.max())
        view.remember("stamp", stamp)
        order = stamp + pos / (float(pos.max()) + 1.0) * 0.5
        order = order.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(order, view.budget, view.valid)
