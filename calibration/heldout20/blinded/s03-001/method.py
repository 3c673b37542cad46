"""Relay-scaled spread (board B_online, query-agnostic prefill).

No question, no attention: each stretch of the context is judged against the stretch that follows it. The context
(after a few opening anchors) is cut into equal relays; every token of a relay is rescaled channel by channel to the
value range the *next* relay spans, and its spread across channels (keys and values alike) says how much it stands
out from what the model read right after it. Within a relay the spreads become shares (a softmax), so every relay
competes on an equal footing. The final relay has no successor and is always kept, as are the anchors.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _relay_spread(x: torch.Tensor, span: int) -> torch.Tensor:
    """x (H, R*span, D) -> (H, (R-1)*span) channel spread of relay r rescaled by relay r+1's range."""
    h, n, d = x.shape
    blocks = x.view(h, n // span, span, d)
    cur, ref = blocks[:, :-1], blocks[:, 1:]
    lo = ref.amin(dim=2, keepdim=True)
    hi = ref.amax(dim=2, keepdim=True)
    scaled = (cur - lo) / (hi - lo).clamp_min(1e-6)
    spread = scaled.std(dim=-1)                            # (H, R-1, span)
    return spread.softmax(dim=-1).reshape(h, -1)


class RelayScaledSpread(EvictionMethod):
    name = "relay_spread"
    anchors = 4
    span = 64

    def select(self, view: LayerView) -> Keep:
        T = view.n_tokens
        span = self.span if T >= 4 * self.span else max(4, T // 4)
        body = T - self.anchors
        relays = body // span
        if relays < 2:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        covered = relays * span
        start = self.anchors
        stop = start + covered
        k = view.keys[:, start:stop].float()
        v = view.values[:, start:stop].float()
        share = _relay_spread(k, span) + _relay_spread(v, span)

        rank = torch.full((view.n_kv_heads, T), float("inf"), device=view.keys.device)
        rank[:, start:stop - span] = share
        return Keep.from_topk(rank, view.budget, view.valid)
