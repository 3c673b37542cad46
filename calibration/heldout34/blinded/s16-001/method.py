"""Forward Placement: ask the context's last queries what they would attend to from further down the page."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class ForwardPlacement(EvictionMethod):
    name = "forward_placement"
    query_window = 32
    ahead = 64              # how far past the context the queries are placed
    kernel = 7

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        qpos = view.query_positions
        bare = view.rotate(view.queries.float(), -qpos)                           # undo RoPE
        end = int(view.positions.max()) + 1
        placed = torch.arange(end + self.ahead - qpos.numel(), end + self.ahead, dtype=qpos.dtype)
        pseudo = view.rotate(bare, placed)                                         # as if decoding later on
        attn = view.attention(pseudo, reduce="sum")                                # (H_q, T): all keys visible
        score = view.group(attn, "mean")
        score = F.avg_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        score = score.masked_fill(view.positions >= qpos.min(), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
