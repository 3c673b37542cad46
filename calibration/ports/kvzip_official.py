import math

import torch
import torch.nn as nn

from harness.api import EvictionMethod, Keep, LayerView


class EchoScore(EvictionMethod):
    name = "echo_score"
    reconstruction_queries = True
    anchors = 4

    def _peak(self, q: torch.Tensor, k: torch.Tensor, kv_heads: int) -> torch.Tensor:
        n_q, d = q.shape[1], q.shape[-1]
        q = q.view(kv_heads, -1, n_q, d)
        k = k.unsqueeze(1).transpose(-2, -1).contiguous()
        w = torch.matmul(q, k) / math.sqrt(d)
        w = nn.functional.softmax(w, dim=-1)
        return w.amax(dim=(-3, -2))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._peak(view.queries, view.keys, view.n_kv_heads)
        score[..., : self.anchors] = 1.0
        keep = min(view.budget, view.n_tokens)
        _, top = torch.topk(score, keep, dim=-1)
        valid = torch.zeros_like(score, dtype=torch.bool)
        valid.scatter_(-1, top, True)
        return Keep(tuple(torch.nonzero(valid[h]).flatten() for h in range(view.n_kv_heads)))
