import math

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class ElasticHeads(EvictionMethod):
    name = "elastic_heads"
    query_window = 32
    ks = 7
    floor_alpha = 0.2

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.valid is not None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        w = view.queries.shape[1]
        base = max(1, view.budget - w)
        floor_cap = int(base * self.floor_alpha)
        heads = view.n_kv_heads
        score = self._window_score(view, w)
        sorted_score, sorted_idx = score.sort(dim=-1, descending=True)
        length = sorted_score.size(-1)
        flat = sorted_score.reshape(length * heads)
        chosen = torch.topk(flat, k=heads * base, dim=-1).indices
        chosen = chosen // length
        cap = torch.zeros(heads, dtype=chosen.dtype)
        cap.scatter_add_(-1, chosen, torch.ones_like(chosen, dtype=cap.dtype))
        cap = torch.round(cap * (1 - self.floor_alpha) + floor_cap).int()
        n = view.n_tokens
        out = []
        for h in range(heads):
            idx = sorted_idx[h][: cap[h]]
            out.append(torch.cat([idx, torch.arange(n - w, n)]).sort().values)
        return Keep(tuple(out))

    def _window_score(self, view: LayerView, w: int) -> torch.Tensor:
        g = view.model.group_size
        keys = view.keys.repeat_interleave(g, dim=0)
        att = torch.matmul(view.queries, keys.transpose(1, 2)) / math.sqrt(keys.shape[-1])
        mask = torch.full((w, w), torch.finfo(att.dtype).min)
        cond = torch.arange(mask.size(-1))
        mask.masked_fill_(cond < (cond + 1).view(mask.size(-1), 1), 0)
        att[:, -w:, -w:] += mask[None, :, :]
        att = torch.nn.functional.softmax(att, dim=-1, dtype=torch.float32)
        mean = att[:, -w:, :-w].mean(dim=-2)
        mean = mean.view(view.n_kv_heads, g, -1).mean(dim=-2)
        return F.max_pool1d(mean, kernel_size=self.ks, padding=self.ks // 2, stride=1)
