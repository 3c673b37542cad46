"""Echo Novelty: reconstruction attention, discounted for tokens that merely repeat their neighbours.

Builds on KVzip (each token scored by the largest attention it gets while the model repeats the context; the
harness's reconstruction pass on board B_offline) and borrows R-KV's observation that near-duplicate keys waste
budget. Here the duplicate check is local and cheap: a token's key is compared (cosine) with the keys of the
eight tokens before it, and its reconstruction score is scaled down by how close the nearest of them is. The
first tokens are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class EchoNovelty(EvictionMethod):
    name = "echo_novelty"
    reconstruction_queries = True
    lookback = 8
    discount = 0.5
    sinks = 4

    def _nearest_prior(self, keys: torch.Tensor) -> torch.Tensor:
        k = F.normalize(keys.float(), dim=-1)
        best = torch.full(k.shape[:2], -1.0, device=k.device)
        for lag in range(1, self.lookback + 1):
            if lag >= k.shape[1]:
                break
            sim = (k[:, lag:] * k[:, :-lag]).sum(-1)
            best[:, lag:] = torch.maximum(best[:, lag:], sim)
        return best.clamp(0.0, 1.0)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        echo = view.group(view.attention(reduce="max"), "max")
        scores = echo * (1.0 - self.discount * self._nearest_prior(view.keys))
        scores[:, : self.sinks] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
