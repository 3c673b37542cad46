import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 32
    spread = 7
    floor = 0.2

    def _weight(self, view: LayerView) -> torch.Tensor:
        seen = view.group(view.attention().mean(dim=1), "mean")            # (H, T)
        payload = view.values.float().pow(2).sum(dim=-1).sqrt()            # (H, T)
        w = (seen * payload).unsqueeze(0)
        return F.max_pool1d(w, self.spread, stride=1, padding=self.spread // 2).squeeze(0)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        w = self._weight(view)
        w = w.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        heads, width = w.shape
        base = int(self.floor * view.budget)
        first = w.topk(base, dim=-1).indices
        rest = w.scatter(1, first, float("-inf")).flatten()
        more = rest.topk(view.budget * heads - base * heads).indices
        out = []
        for h in range(heads):
            extra = more[(more // width) == h] % width
            out.append(torch.cat([first[h], extra]).sort().values)
        return Keep(tuple(out))
