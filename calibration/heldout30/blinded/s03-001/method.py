"""Roll Call: a decode-time cache that keeps the tokens the recent steps keep coming back to.

Whenever a layer reaches its cap, the newest 64 queries (the prompt's closing rows on the first call) take a
roll call: a token is marked present by a row when that row gives it more than its fair share of attention
(one over the number of tokens the row can see). The marks are counted over the rows and the query heads of
each KV head; the tokens with the fewest marks leave first. The newest 16 tokens, which the roll call has
barely had time to see, are always kept; ties go to the newer token.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class RollCall(EvictionMethod):
    name = "roll_call"
    query_window = 64
    newest = 16

    def _present(self, view: LayerView) -> torch.Tensor:
        attn = view.attention()                                        # (H_q, N, T), causal
        g = view.model.group_size
        qpos = view.query_positions.to(attn.device)
        pos = view.positions.repeat_interleave(g, dim=0)
        real = view.valid_mask().repeat_interleave(g, dim=0)
        sees = (pos[:, None, :] <= qpos[None, :, None]) & real[:, None, :]
        share = 1.0 / sees.sum(dim=-1, keepdim=True).clamp_min(1)      # a row's fair share
        marks = torch.count_nonzero((attn > share) & sees, dim=1)       # (H_q, T)
        return view.group(marks.float(), "sum")

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        tally = self._present(view)
        span = view.positions.float()
        tally = tally + span / (span.max() + 1.0) * 0.5                 # ties: the newer token
        lengths = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(lengths[h])
            tally[h, max(0, n - self.newest):n] = float("inf")
        return Keep.from_topk(tally, view.budget, view.valid)

    def on_decode(self, view: LayerView) -> Keep:
        return self.select(view)
