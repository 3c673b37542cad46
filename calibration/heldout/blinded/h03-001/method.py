import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 32
    target = 0.95
    n_special = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        a = view.group(view.attention().mean(dim=1), "mean")     # (H, T) mean attention of the window
        n, b = view.n_tokens, view.budget
        chosen = []
        for h in range(view.n_kv_heads):
            row = a[h]
            special = torch.zeros(n, dtype=torch.bool)
            special[: self.n_special] = True
            local = torch.zeros(n, dtype=torch.bool)
            local[n - (b - self.n_special):] = True
            both = special | local
            mass = row[both].sum() / row.sum().clamp_min(1e-9)
            if mass >= self.target:
                score = both.float()
            else:
                score = row.clone()
                score[: self.n_special] = float("inf")
            chosen.append(score)
        return Keep.from_topk(torch.stack(chosen), b, view.valid)
