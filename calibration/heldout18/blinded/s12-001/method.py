"""Neighbourhood-aware reconstruction scores (board B_offline).

KVzip scores every cached pair by the largest attention it receives while the model repeats the context. A token
whose neighbour is needed for the repeat is often needed to read that neighbour too (the second half of a number, a
name's surname). We blend each token's repeat score with the best score in its +/-1 neighbourhood, so isolated spikes
carry their immediate neighbours with them.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class NeighbourhoodRepeat(EvictionMethod):
    name = "neighbourhood_repeat"
    reconstruction_queries = True
    sinks = 4
    blend = 0.5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        peak = view.attention(view.queries, reduce="max")  # (H_q, T), every repeat row sees the whole context
        peak = view.group(peak, "max")
        around = F.max_pool1d(peak.unsqueeze(1), kernel_size=3, stride=1, padding=1).squeeze(1)
        score = (1 - self.blend) * peak + self.blend * around
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
