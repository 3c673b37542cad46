import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


def twin_penalty(keys: torch.Tensor, threshold: float = 0.5) -> torch.Tensor:
    heads = keys.shape[0]
    kn = keys / (keys.norm(dim=-1, keepdim=True) + 1e-8)
    sim = torch.matmul(kn, kn.transpose(-1, -2))
    for h in range(heads):
        sim[h].fill_diagonal_(0.0)
    close = sim > threshold
    idx = torch.where(close, torch.arange(close.size(-1)), torch.zeros_like(close, dtype=torch.long))
    newest = torch.max(idx, dim=-1)[0]
    rows = torch.arange(heads).unsqueeze(1).repeat(1, newest.size(1))
    cols = torch.arange(newest.size(1)).unsqueeze(0).repeat(heads, 1)
    sim[rows, cols, newest] = 0
    return sim.mean(dim=1).softmax(dim=-1)


def grouped_logits(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    heads, n_q, d = q.shape
    kv = k.shape[0]
    q = q.view(kv, heads // kv, n_q, d)
    w = torch.matmul(q, k.unsqueeze(1).transpose(2, 3)) / math.sqrt(d)
    return w.max(dim=1).values


class LeanTrace(EvictionMethod):
    name = "lean_trace"
    query_window = 8
    ks = 7
    blend = 0.07

    def select(self, view: LayerView) -> Keep:
        n, w = view.n_tokens, self.query_window
        if view.queries is None or view.valid is not None or n <= view.budget or view.queries.shape[1] < w:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        logits = grouped_logits(view.queries, view.keys)
        imp = nn.functional.softmax(logits[:, -w:, :-w], dim=-1, dtype=torch.float32).mean(dim=-2)
        imp = F.max_pool1d(imp, kernel_size=self.ks, padding=self.ks // 2, stride=1)
        red = twin_penalty(view.keys)[:, :-w]
        final = imp * self.blend - red * (1 - self.blend)
        idx = final.topk(max(0, view.budget - w), dim=-1).indices
        cur = torch.arange(n - w, n).expand(idx.shape[0], -1)
        return Keep(tuple(torch.cat([idx, cur], dim=-1)))
