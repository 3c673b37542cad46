"""Last-call stamps (board C, decode-time eviction).

A reasoning trace leaves behind way-points: a token is read intensely while the step it belongs to is being worked
out, and then not at all. How much attention a token has collected says little about whether it is still in use;
when it was last called on says a lot. Every cached token carries a stamp: the position of the latest query that paid
it more than a call threshold (three times an even share of that query's visible entries, in any of the KV head's
query heads); a new token is stamped with its own position. When the layer is full we keep the freshest stamps;
the 4 opening tokens are always kept. Stamps are carried between calls (remember / recall), and every query since
the previous call updates them.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class LastCallStamps(EvictionMethod):
    name = "last_call_stamps"
    query_window = 64
    call_factor = 3.0
    opening = 4

    def _restamp(self, view: LayerView) -> torch.Tensor:
        stamp = view.recall("stamp", fill=-1.0)
        stamp = torch.where(stamp < 0, view.positions.float(), stamp)  # new tokens: their own position
        if view.queries is None:
            return stamp
        fresh = view.query_positions > view.state.get("stamped_until", -1)
        if not bool(fresh.any()):
            return stamp
        qpos = view.query_positions[fresh]
        g = view.model.group_size
        attn = view.attention()[:, fresh].float()  # (H_q, n, T)
        pos = view.positions.repeat_interleave(g, dim=0)[:, None, :]
        real = view.valid_mask().repeat_interleave(g, dim=0)[:, None, :]
        sees = (pos <= qpos[None, :, None]) & real
        share = 1.0 / sees.sum(dim=-1, keepdim=True).clamp_min(1).float()
        called = (attn > self.call_factor * share) & sees  # (H_q, n, T)
        when = torch.where(called, qpos[None, :, None].float().expand_as(attn), torch.full_like(attn, -1.0))
        latest = view.group(when.amax(dim=1), "max")  # (H_kv, T)
        view.state["stamped_until"] = int(qpos.max())
        return torch.maximum(stamp, latest)

    def on_decode(self, view: LayerView) -> Keep:
        stamp = self._restamp(view)
        view.remember("stamp", stamp)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        ranked = stamp + 1e-3 * view.positions.float() / (view.positions.max().float() + 1.0)
        ranked = ranked.masked_fill(view.positions < self.opening, float("inf"))
        return Keep.from_topk(ranked, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        return self.on_decode(view)
