import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 0
    question_queries = True
    share = 0.2

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        proxy = view.group(view.attention(reduce="sum"), "sum")          # what the question span reads
        b = view.budget
        n_rand = int(b * self.share)
        picks = []
        for h in range(view.n_kv_heads):
            s = proxy[h].clone()
            top = s.topk(b - n_rand).indices
            rest = torch.ones_like(s, dtype=torch.bool)
            rest[top] = False
            pool = rest.nonzero().flatten()
            extra = pool[torch.randperm(pool.numel())[:n_rand]]
            s[top] = 2.0
            s[extra] = 1.0
            picks.append(s)
        return Keep.from_topk(torch.stack(picks), b, view.valid)
