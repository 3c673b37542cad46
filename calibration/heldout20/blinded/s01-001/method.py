"""Dual-clock retention (board C, decode-time eviction).

Each cached token carries two running averages of the attention it receives from the newest queries: a fast clock
(half-life of about one eviction round) and a slow clock (half-life of about fourteen rounds). A token is worth
keeping when either clock says so: the fast one catches what the current reasoning step uses, the slow one what the
trace keeps coming back to. The newest 32 tokens are always kept.

Builds on H2O (accumulated attention as the keep signal) and A2SF (a forgetting factor on that accumulation); what is
new here is keeping two forgetting factors side by side and ranking by the larger of the two.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class DualClockRetention(EvictionMethod):
    name = "dual_clock"
    query_window = 64          # at least the block at the embedded model's caps (16 / 32)

    fast_decay = 0.5
    slow_decay = 0.95
    slow_weight = 0.6          # the slow clock's vote counts a little less than the fast one's
    newest = 32

    def select(self, view: LayerView) -> Keep:
        live = view.valid_mask()
        per_q = view.attention(reduce="mean")              # (H_q, T): mean over the newest queries
        now = view.group(per_q, "mean")                      # (H_kv, T)

        fast = view.recall("fast")
        slow = view.recall("slow")
        fast = self.fast_decay * fast + (1.0 - self.fast_decay) * now
        slow = self.slow_decay * slow + (1.0 - self.slow_decay) * now
        view.remember("fast", fast)
        view.remember("slow", slow)

        # the slow clock moves by (1 - 0.95) per round: rescale it to the fast clock's range before comparing
        slow_norm = slow * ((1.0 - self.fast_decay) / (1.0 - self.slow_decay))
        worth = torch.maximum(fast, self.slow_weight * slow_norm)

        pos = view.positions.masked_fill(~live, -1)
        newest_pos = pos.max(dim=1, keepdim=True).values
        worth = worth.masked_fill(pos > newest_pos - self.newest, 1e9)
        return Keep.from_topk(worth, view.budget, view.valid)
