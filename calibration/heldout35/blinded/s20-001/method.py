"""Echo Top-Three: reconstruction attention averaged over each token's three strongest readers.

Builds on KVzip: on board B_offline the harness replays the context behind a "repeat" instruction and hands
over that pass's queries; KVzip keeps the tokens with the largest attention from that pass. A single maximum
can come from one stray query, so here a token's score is the mean of the three largest attentions it receives
in the pass (per query head, then averaged over the query heads of its KV head). The first tokens are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class EchoTopThree(EvictionMethod):
    name = "echo_top_three"
    reconstruction_queries = True
    depth = 3
    rows = 128
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h_q, n_q = view.queries.shape[:2]
        best = torch.zeros(h_q, self.depth, view.n_tokens, device=view.keys.device)
        for s in range(0, n_q, self.rows):
            qp = None if view.query_positions is None else view.query_positions[s:s + self.rows]
            a = reference_attention(view.queries[:, s:s + self.rows], view.keys, view.positions, qp,
                                    view.model.group_size, view.valid, scale=view.model.scale)
            best = torch.cat([best, a], dim=1).topk(self.depth, dim=1).values
        scores = view.group(best.mean(dim=1), "mean")
        scores[:, : self.sinks] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
