"""Return-gap retention (board C, decode-time eviction).

In a reasoning trace a token is often read, left alone for a while, and read again (an intermediate result, a
variable name). Ranking by current attention throws such a token out during its quiet spell. We learn each token's
rhythm instead. Per layer we carry two numbers per token: when it was last "hit" (a query paid it more than twice an
even share, max over the KV head's query heads) and the longest gap seen so far between two hits. Every new query
since the previous call is replayed in order to update them. At eviction a token's standing is its longest gap
divided by the time since its last hit (+1): a token still inside its usual gap is expected back and stands high;
one silent for longer than it has ever been silent stands low. Tokens never hit stand by their age alone, lowest.
The 4 opening tokens and the newest 16 are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ReturnGap(EvictionMethod):
    name = "return_gap"
    query_window = 64
    hit_factor = 2.0
    opening = 4
    newest = 16

    def _replay(self, view: LayerView, last_hit: torch.Tensor, gap: torch.Tensor) -> None:
        done = view.state.get("replayed_until", -1)
        fresh = view.query_positions > done
        if not bool(fresh.any()):
            return
        attn = view.group(view.attention()[:, fresh].float(), "max")  # (H_kv, n, T)
        qpos = view.query_positions[fresh]
        sees = view.positions[:, None, :] <= qpos[None, :, None]
        sees &= view.valid_mask()[:, None, :]
        even = 1.0 / sees.sum(dim=-1, keepdim=True).clamp_min(1).float()
        hits = (attn > self.hit_factor * even) & sees  # (H_kv, n, T)
        for i in range(hits.shape[1]):
            now = float(qpos[i])
            hit = hits[:, i]
            seen_before = last_hit >= 0
            gap.copy_(torch.where(hit & seen_before, torch.maximum(gap, now - last_hit), gap))
            last_hit.copy_(torch.where(hit, torch.full_like(last_hit, now), last_hit))
        view.state["replayed_until"] = int(qpos.max())

    def on_decode(self, view: LayerView) -> Keep:
        last_hit = view.recall("last_hit", fill=-1.0)
        gap = view.recall("gap", fill=0.0)
        if view.queries is not None:
            self._replay(view, last_hit, gap)
        view.remember("last_hit", last_hit)
        view.remember("gap", gap)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        top = view.positions.masked_fill(~view.valid_mask(), -1).amax(dim=-1, keepdim=True)
        since = (top.float() - last_hit).clamp_min(0.0)
        standing = torch.where(last_hit >= 0, gap / (since + 1.0) + 1.0 / (since + 1.0),
                               -1.0 + view.positions.float() / (top.float() + 1.0))
        pinned = (view.positions < self.opening) | (view.positions > top - self.newest)
        return Keep.from_topk(standing.masked_fill(pinned, float("inf")), view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        return self.on_decode(view)
