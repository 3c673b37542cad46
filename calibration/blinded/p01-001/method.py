import math

import torch
from torch.nn import functional as fn

from harness.api import EvictionMethod, Keep, LayerView


class FocusedRecall(EvictionMethod):
    name = "focused_recall"
    query_window = 64
    span = 5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        w = view.queries.shape[1]
        h, n = view.n_kv_heads, view.n_tokens
        probs = self._probe(view, view.queries, view.keys, w)
        s = probs.mean(dim=-2)
        s = fn.avg_pool1d(s, kernel_size=self.span, padding=self.span // 2, stride=1)
        s = s.view(h, view.model.group_size, n - w).mean(1)
        s = fn.pad(s, (0, w), value=s.max().item() + 1)
        return Keep.from_topk(s, view.budget, view.valid)

    def _probe(self, view: LayerView, q: torch.Tensor, k: torch.Tensor, w: int) -> torch.Tensor:
        kk = k.repeat_interleave(view.model.group_size, dim=0)
        logits = torch.matmul(q, kk.transpose(1, 2)) / math.sqrt(q.shape[-1])
        m = torch.ones_like(logits) * float("-inf")
        m = torch.triu(m, diagonal=k.shape[1] - w + 1)
        logits += m
        probs = fn.softmax(logits, dim=-1, dtype=torch.float32).to(q.dtype)
        return probs[..., :-w]
