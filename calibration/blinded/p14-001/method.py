import math

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class SharedPool(EvictionMethod):
    name = "shared_pool"
    query_window = 64
    pool_k = 5
    floor = 0.20

    def _base(self, view: LayerView) -> torch.Tensor:
        w = view.queries.shape[1]
        n = view.n_tokens
        keys = view.keys.repeat_interleave(view.model.group_size, dim=0)
        a = torch.matmul(view.queries, keys.transpose(1, 2)) / math.sqrt(keys.shape[-1])
        a += torch.triu(torch.ones_like(a) * float("-inf"), diagonal=n - w + 1)
        a = torch.nn.functional.softmax(a, dim=-1, dtype=torch.float32)[..., :-w]
        s = F.avg_pool1d(a.mean(dim=-2), kernel_size=self.pool_k, padding=self.pool_k // 2, stride=1)
        s = s.view(view.n_kv_heads, view.model.group_size, n - w).mean(1)
        return F.pad(s, (0, w), value=s.max().item() + 1)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.valid is not None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = self._base(view)
        heads, n = s.shape
        kept = view.budget
        safe = int(kept * self.floor)
        top = torch.topk(s, safe, dim=-1).indices
        s.scatter_(-1, top, torch.finfo(s.dtype).max)
        drop = heads * (n - kept)
        flat = torch.topk(-s.reshape(-1), drop).indices
        h_idx, t_idx = flat // n, flat % n
        alive = torch.ones_like(s, dtype=torch.bool)
        alive[h_idx, t_idx] = False
        return Keep(tuple(torch.nonzero(alive[h]).flatten() for h in range(heads)))
