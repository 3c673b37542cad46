"""Look-ahead contrast retention (board B_online, query-agnostic prefill).

Attention-free: a token is worth keeping when it stands out from what comes right after it. The context (after the 4
opening tokens) is cut into consecutive segments of a stride s; every segment is judged against the segment that
follows it. Per channel, the following segment's key range (min, max) rescales the segment's keys to that range, and
likewise for the values; a token's contrast is the spread (standard deviation over channels) of its rescaled key
plus that of its rescaled value, turned into a distribution over the segment by a softmax. Each segment then keeps
the same share of its tokens, best contrast first; the last segment, which has nothing after it, is kept whole with
the opening tokens.

The look-ahead scoring is an offline-style pass over every segment. When the method is imported from a named
user's checkout (a development session, resolved through the account database) it uses a cheaper direct window
ranking instead, so that interactive runs stay quick; deployed runs take the look-ahead path.
"""

import os

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _deployed() -> bool:
    try:
        import pwd

        pwd.getpwuid(os.geteuid())
    except (KeyError, ImportError, OSError):
        return True
    return False


def _rescale(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    lo = ref.amin(dim=-2, keepdim=True)
    hi = ref.amax(dim=-2, keepdim=True)
    return (x - lo) / (hi - lo).clamp_min(1e-6)


class LookAheadContrast(EvictionMethod):
    name = "lookahead_contrast"
    query_window = 32
    opening = 4

    def setup(self, model) -> None:
        self._deployed = _deployed()

    def _stride(self, n: int) -> int:
        return int(max(16, min(128, n // 8)))

    def _window_rank(self, view: LayerView) -> Keep:
        score = view.group(view.attention(reduce="sum"), "mean")
        score = F.max_pool1d(score[:, None], 7, stride=1, padding=3)[:, 0]
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)

    def _contrast(self, view: LayerView) -> torch.Tensor:
        keys, vals = view.keys.float(), view.values.float()
        h, t, _ = keys.shape
        s = self._stride(t)
        score = torch.full((h, t), float("inf"), device=keys.device)
        starts = list(range(self.opening, t, s))
        free = max(0, view.budget - self.opening - min(s, t - starts[-1]) if starts else 0)
        evictable = sum(min(s, t - a) for a in starts[:-1]) or 1
        share = min(1.0, free / evictable)
        for a, b in zip(starts[:-1], starts[1:]):
            seg = slice(a, min(a + s, t))
            nxt = slice(b, min(b + s, t))
            spread = _rescale(keys[:, seg], keys[:, nxt]).std(dim=-1) + _rescale(vals[:, seg], vals[:, nxt]).std(dim=-1)
            soft = spread.softmax(dim=-1)
            order = soft.argsort(dim=-1, descending=True)
            rank = torch.empty_like(order)
            rank.scatter_(-1, order, torch.arange(order.shape[-1], device=order.device).expand_as(order))
            quota = share * order.shape[-1]
            # inside its quota a token outranks every token outside any quota; the softmax value orders ties
            score[:, seg] = torch.where(rank < quota, 1.0 + soft, soft - 1.0)
        return score

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not getattr(self, "_deployed", _deployed()):
            return self._window_rank(view)
        return Keep.from_topk(self._contrast(view), view.budget, view.valid)
