"""Relay-gated selection (board A).

Shallow layers still mix the prompt broadly; past the middle of the network the tokens a layer cares about
settle. We exploit that with a relay: the middle attention layer nominates a shortlist (its strongest tokens over
all of its heads, ``relay_frac`` of the prompt) and every deeper layer chooses its budget from that shortlist only,
while the shallower layers choose freely. Scores everywhere are the attention of the closing rows (the question
and the last few prompt rows), summed over each KV head's query heads and smoothed with a small box filter; the
closing rows themselves are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class RelayGate(EvictionMethod):
    name = "relay_gate"
    query_window = 8
    question_queries = True
    relay_depth = 0.5
    relay_frac = 0.2
    box = 7

    def setup(self, model: ModelInfo) -> None:
        layers = model.attention_layers
        self._relay_layer = layers[int(len(layers) * self.relay_depth)] if layers else 0
        self._shortlists: dict[tuple[int, int], torch.Tensor] = {}

    def _score(self, view: LayerView) -> torch.Tensor:
        a = view.attention(reduce="sum")  # (H_q, T) over the closing rows, causal
        s = view.group(a, "sum")
        s = F.avg_pool1d(s[:, None], self.box, stride=1, padding=self.box // 2, count_include_pad=False)[:, 0]
        return s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        if not hasattr(self, "_shortlists"):
            self.setup(view.model)
        s = self._score(view)
        key = (t, b)
        if view.layer == self._relay_layer:
            width = min(t, max(b, int(round(self.relay_frac * t))))
            pooled = s.clamp_max(1e9).sum(0)
            self._shortlists[key] = view.positions[0, pooled.topk(width).indices].sort().values
        elif view.layer > self._relay_layer and key in self._shortlists:
            allowed = torch.isin(view.positions, self._shortlists[key])
            s = s.masked_fill(~allowed, float("-inf"))
        return Keep.from_topk(s, b, view.valid)
