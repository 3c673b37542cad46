"""Energy Recall: KVzip's reconstruction attention, pooled by its energy rather than its peak.

KVzip (Kim et al., 2025) has the model re-read its context after a "repeat the previous context" prompt and
keeps the tokens that the re-reading queries attend to most, taking the maximum over the queries. The maximum
rewards a token that one query needed once as much as a token many queries needed; the sum (H2O-style) lets a
few broad, flat rows dominate. This method sits between the two: each token is scored by the L2 norm of its
reconstruction-attention column, sqrt(sum_q a_q^2), which favours tokens that are needed sharply, and more than
once. Query heads of a group are combined by their maximum, as in KVzip. The harness's reconstruction pass
supplies the queries (board B_offline); the attention is computed in chunks of queries, never all at once.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class EnergyRecall(EvictionMethod):
    name = "energy_recall"
    reconstruction_queries = True
    query_window = 32        # fallback when no reconstruction pass is offered
    chunk = 128

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = view.queries
        energy = torch.zeros(q.shape[0], view.n_tokens, device=view.keys.device)
        for start in range(0, q.shape[1], self.chunk):
            a = view.attention(q[:, start:start + self.chunk])   # (H_q, c, T), every key is visible
            energy += a.pow(2).sum(dim=1)
        score = view.group(energy.sqrt(), "max")
        return Keep.from_topk(score, view.budget, view.valid)
