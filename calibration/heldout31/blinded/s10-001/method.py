"""Forward Echo: ask the context what it will be asked from where the answer will be written.

The closing rows of the context are the best guess of what a later question looks like, but they sit at the end of
the context, where position alone tilts their attention toward nearby tokens. Forward Echo lifts their content out
of its positions (the layer's own rotation undone) and sets it down again at the positions the answer will occupy,
a stretch just past the context; those echoes then read the whole cache (no causal cut: they all come after it).
Their attention, summed over the echoes, averaged over the group and avg-pooled over 5 tokens, ranks the context;
the closing rows themselves are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class ForwardEcho(EvictionMethod):
    name = "forward_echo"
    query_window = 32
    gap = 24        # the echoes start this many positions past the last context token
    width = 5

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        qpos = view.query_positions
        bare = view.rotate(view.queries, -qpos)                           # content without position
        ahead = torch.arange(qpos.numel(), device=qpos.device) + int(view.positions.max()) + 1 + self.gap
        echoes = view.rotate(bare, ahead)
        attn = view.attention(echoes, reduce="sum")                        # explicit queries: every key visible
        scores = view.group(attn, "mean")
        scores = F.avg_pool1d(scores[:, None], self.width, stride=1, padding=self.width // 2,
                              count_include_pad=False)[:, 0]
        scores = scores.masked_fill(view.positions >= qpos.min(), float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
