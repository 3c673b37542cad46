"""Follow-On Reserve: keep what the question attends to, and reserve a fifth of the budget for the tokens that
immediately follow the strongest hits (in needle-style contexts the answer comes right after its key)."""

import torch

from harness import EvictionMethod, Keep, LayerView


class FollowOnReserve(EvictionMethod):
    name = "follow_on_reserve"
    question_queries = True
    reserve = 0.2
    reach = 2

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = view.group(view.attention(reduce="sum"), "mean")          # (H_kv, T)
        T = s.shape[1]
        spare = int(view.budget * self.reserve)
        main = view.budget - spare
        out = []
        for h in range(s.shape[0]):
            first = s[h].topk(main).indices
            chosen = torch.zeros(T, dtype=torch.bool)
            chosen[first] = True
            bonus = torch.zeros(T)
            for d in range(1, self.reach + 1):
                nxt = (first + d).clamp_max(T - 1)
                bonus.index_put_((nxt,), s[h, first] / d, accumulate=True)
            bonus = bonus.masked_fill(chosen, float("-inf"))
            extra = bonus.topk(min(spare, int((~chosen).sum()))).indices
            extra = extra[bonus[extra] > 0]
            rest = s[h].masked_fill(chosen, float("-inf"))
            rest[extra] = float("-inf")
            fill = rest.topk(view.budget - main - extra.numel()).indices if view.budget - main - extra.numel() > 0 else first[:0]
            out.append(torch.cat([first, extra, fill]).unique().sort().values)
        return Keep(tuple(out))
