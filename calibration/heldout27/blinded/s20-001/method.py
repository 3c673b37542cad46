"""Look-ahead readers (board B_online): ask the context's closing rows what they would read from where the answer
will be written.

The closing rows of the context know what the text is about, but they sit at the context's last positions, and
what they attend to there is coloured by locality. We take their queries back to position-free form (undoing the
rotary rotation), move them to the positions the answer will occupy (just past the context), and let these
look-ahead readers attend over the whole context. A token's score is the attention the readers pay it, summed
over the readers and averaged over the query heads of its KV head, smoothed over 5 neighbours; the closing rows'
own tokens are kept.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class LookAheadReaders(EvictionMethod):
    name = "look_ahead_readers"
    query_window = 32
    gap = 1  # the first reader sits this many positions past the context
    smooth = 5

    def readers(self, view: LayerView) -> torch.Tensor:
        assert view.queries is not None and view.query_positions is not None
        qpos = view.query_positions.to(view.keys.device)
        plain = view.rotate(view.queries.float(), -qpos)  # (H_q, N, D) without the rotation
        start = int(view.positions.max()) + self.gap
        ahead = torch.arange(start, start + plain.shape[1], device=plain.device)
        return view.rotate(plain, ahead)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(self.readers(view), reduce="sum")  # not causal: the readers sit past every key
        score = view.group(attn, "mean")
        score = F.avg_pool1d(score[:, None], self.smooth, stride=1, padding=self.smooth // 2,
                             count_include_pad=False)[:, 0]
        own = view.positions >= view.query_positions.min()
        return Keep.from_topk(score.masked_fill(own, float("inf")), view.budget, view.valid)
