import torch

from harness.api import EvictionMethod, Keep, LayerView


class StateTrim(EvictionMethod):
    name = "state_trim"
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.n_tokens <= view.budget or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        weights = view.attention(view.queries[:, -1:])
        avg = torch.zeros(view.n_tokens)
        for h in range(weights.shape[0]):
            avg += weights[h, -1, :]
        avg = avg / weights.shape[0]
        vals, ind = torch.topk(avg.clone().detach(), k=view.budget, dim=-1)
        ind = torch.sort(ind).values
        return Keep.same_for_all_heads(ind, view.n_kv_heads)
