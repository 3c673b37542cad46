"""Layer-hysteresis selection (board A).

Question attention (SnapKV-style: question span + last 24 prompt rows, group mean, max-pooled 5) ranks the tokens of
each layer. A layer is evaluated right after the one below it, whose kept set is remembered; tokens the previous layer
kept get a bonus of half this layer's mean kept score, so the selection only changes across depth where the evidence
for a change is clear.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class LayerHysteresis(EvictionMethod):
    name = "layer_hysteresis"
    query_window = 24
    question_queries = True
    bonus = 0.5
    kernel = 5

    def setup(self, model) -> None:
        self._order = list(model.attention_layers)
        self._last: dict[int, tuple[int, torch.Tensor]] = {}

    def select(self, view: LayerView) -> Keep:
        if not hasattr(self, "_last"):
            self.setup(view.model)
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = view.group(view.attention(reduce="mean"), "mean")
        s = F.max_pool1d(s[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        pos = self._order.index(view.layer) if view.layer in self._order else -1
        prev = self._last.get(self._order[pos - 1]) if pos > 0 else None
        if prev is not None and prev[0] == view.n_tokens:
            held = torch.isin(view.positions, prev[1].to(view.positions.device))
            ref = s.topk(min(view.budget, s.shape[1]), dim=1).values.mean(dim=1, keepdim=True)
            s = s + self.bonus * ref * held
        observed = view.positions >= int(view.query_positions.min())
        s = s.masked_fill(observed, float("inf"))
        keep = Keep.from_topk(s, view.budget, view.valid)
        kept_pos = torch.cat([view.positions[h, i] for h, i in enumerate(keep.indices)]).unique()
        self._last = {view.layer: (view.n_tokens, kept_pos.cpu())}
        return keep
