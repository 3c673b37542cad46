import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 1
    rounds = 0          # walk length; 0 = the seed distribution is already stationary on short prompts

    def _walk(self, seed: torch.Tensor) -> torch.Tensor:
        rank = seed
        for _ in range(self.rounds):
            rank = 0.85 * rank + 0.15 * seed
        return rank

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        seed = view.attention(reduce="mean").mean(dim=0)        # (T,) the newest query, all heads
        rank = self._walk(seed)
        top = rank.topk(min(view.budget, view.n_tokens)).indices.sort().values
        return Keep.same_for_all_heads(top, view.n_kv_heads)
