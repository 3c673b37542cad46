import math

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class NewestLook(EvictionMethod):
    name = "newest_look"
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = view.queries[:, -1:]
        k = view.keys.repeat_interleave(view.model.group_size, dim=0)
        w = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])
        w = torch.nn.functional.softmax(w, dim=-1, dtype=torch.float32)[..., :-1]
        s = w.mean(0)
        s = s.repeat(view.n_kv_heads, 1)
        s = F.pad(s, (0, 1), value=s.max().item() + 1)
        return Keep.from_topk(s, view.budget, view.valid)
