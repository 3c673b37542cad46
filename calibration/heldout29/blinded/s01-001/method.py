"""Twin Focus: read the question's attention at two temperatures and give each reading its own share of the budget.

A question row's softmax at the model's own temperature spreads its mass over everything loosely related to the
question; the same row with its logits multiplied by ``sharpen`` keeps only the few keys it prefers by a clear margin
(the needle-like ones). A single reading has to trade one against the other. Here half of what is left after the
pinned tokens goes to the sharp reading's best keys and the other half to the soft reading's best among the rest.
Builds on SnapKV (question/window attention, pooling) and StreamingLLM (the first tokens kept).
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class TwinFocus(EvictionMethod):
    name = "twin_focus"
    query_window = 16
    question_queries = True
    sharpen = 3.0        # logit multiplier of the sharp reading
    sharp_share = 0.5    # share of the free budget that the sharp reading fills first
    kernel = 5           # max-pool width of the soft reading only
    n_sink = 4

    def _reading(self, view: LayerView, temperature: float) -> torch.Tensor:
        window = view.model.sliding_window if view.layer in view.model.sliding_layers else None
        probs = reference_attention(view.queries, view.keys, view.positions, view.query_positions,
                                    view.model.group_size, view.valid, scale=view.model.scale * temperature,
                                    window=window, reduce="sum")
        return view.group(probs, "mean")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        soft = self._reading(view, 1.0)
        soft = F.max_pool1d(soft[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        sharp = self._reading(view, self.sharpen)

        pinned = (view.positions < self.n_sink) | (view.positions >= view.query_positions.min())
        pinned &= valid
        out = []
        for h in range(view.n_kv_heads):
            room = view.budget
            chosen = torch.zeros_like(valid[h])
            fixed = torch.nonzero(pinned[h]).flatten()
            if fixed.numel() > room:  # the newest pinned rows first when they alone overflow
                fixed = fixed[-room:]
            chosen[fixed] = True
            room -= int(fixed.numel())
            n_sharp = int(round(room * self.sharp_share))
            for score, take in ((sharp[h], n_sharp), (soft[h], room - n_sharp)):
                if take <= 0:
                    continue
                free = score.masked_fill(chosen | ~valid[h], float("-inf"))
                take = min(take, int((free > float("-inf")).sum()))
                chosen[free.topk(take).indices] = True
            out.append(torch.nonzero(chosen).flatten())
        return Keep(tuple(out))
