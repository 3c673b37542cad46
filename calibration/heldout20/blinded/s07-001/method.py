"""Forward-cast retention (board B_online, query-agnostic prefill).

On this board the question arrives after compression, at positions past the end of the context. The context's own
last rows are the best guess of what such a question will look like, but they sit at the wrong place: RoPE makes
their attention lean on nearby tokens. Forward-cast retention strips the rotation from the closing rows, re-casts
them at the positions where the answer will be decoded (just past the context, shifted by a small gap), and ranks the
context by the attention of these forward-cast rows. The closing rows' own tokens are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ForwardCastRetention(EvictionMethod):
    name = "forward_cast"
    query_window = 32
    gap = 16          # the question's template precedes the answer: cast a little past the end

    def select(self, view: LayerView) -> Keep:
        q = view.queries                                   # (H_q, N, D), post-RoPE
        qpos = view.query_positions
        bare = view.rotate(q, -qpos)                       # pre-RoPE rows
        end = int(view.positions.max())
        cast_at = torch.arange(1, q.shape[1] + 1, device=q.device) + end + self.gap
        cast = view.rotate(bare, cast_at).to(q.dtype)
        lean = view.attention(cast, reduce="sum")         # (H_q, T); no causal mask needed: all cast rows are later
        score = view.group(lean, "mean")
        score = score.masked_fill(view.positions >= int(qpos.min()), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
