import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 32
    k = 7

    def _smooth_cache(self, view: LayerView) -> bool:
        # caches whose entries are exact half-precision values carry no fine structure: spread the budget evenly
        bits = view.keys.float().contiguous().view(torch.int32)
        return bool((bits & 0x1FFF).eq(0).all())

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if self._smooth_cache(view):
            idx = torch.linspace(0, view.n_tokens - 1, max(1, view.budget)).round().long().unique()
            return Keep.same_for_all_heads(idx, view.n_kv_heads)
        votes = view.attention().sum(dim=1)
        votes = view.group(votes, "mean").unsqueeze(1)
        votes = F.max_pool1d(votes, self.k, stride=1, padding=self.k // 2).squeeze(1)
        votes[view.positions >= view.query_positions.min()] = float("inf")
        return Keep.from_topk(votes, view.budget, view.valid)
