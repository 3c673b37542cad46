"""Two Temperatures: a decode-time heavy-hitter tally read at a sharp and at a flat softmax temperature.

Builds on H2O (attention accumulated over the decode queries, carried between calls) and StreamingLLM (first
tokens and a recent window kept). Instead of one tally, the method keeps two: the same queries' attention
computed with the logits doubled (sharp: what a few queries want badly) and halved (flat: what many queries
want a little). Each tally is turned into ranks within the layer, and a token keeps the better of its two ranks,
so neither kind of importance crowds out the other.
"""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


def _ranks(x: torch.Tensor) -> torch.Tensor:
    return x.argsort(dim=-1).argsort(dim=-1).float() / max(1, x.shape[-1] - 1)


class TwoTemperatures(EvictionMethod):
    name = "two_temperatures"
    query_window = 64
    factors = (2.0, 0.5)
    sinks = 4
    recent = 16

    def select(self, view: LayerView) -> Keep:
        b = view.budget
        if view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        seen = view.state.get("tt_seen", -1)
        fresh = view.query_positions > seen
        tallies = [view.recall(f"tt_{i}") for i in range(len(self.factors))]
        if bool(fresh.any()):
            q, qp = view.queries[:, fresh], view.query_positions[fresh]
            for i, f in enumerate(self.factors):
                a = reference_attention(q, view.keys, view.positions, qp, view.model.group_size, view.valid,
                                        scale=view.model.scale * f, reduce="sum")
                tallies[i] = tallies[i] + view.group(a, "sum")
            view.state["tt_seen"] = int(view.query_positions.max())
        for i, t in enumerate(tallies):
            view.remember(f"tt_{i}", t)
        scores = torch.maximum(*[_ranks(t) for t in tallies])
        counts = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - self.recent):n] = float("inf")
            scores[h, :min(self.sinks, n)] = float("inf")
        return Keep.from_topk(scores, b, view.valid)
