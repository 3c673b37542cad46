import math

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class WindowVote(EvictionMethod):
    name = "window_vote"
    query_window = 32
    width = 7

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        obs = view.queries.shape[1]
        n = view.n_tokens
        g = view.model.group_size
        picked = []
        for head in range(view.n_kv_heads):
            q = view.queries[head * g:(head + 1) * g]
            k = view.keys[head]
            w8 = torch.matmul(q, k.transpose(0, 1)) / math.sqrt(k.shape[-1])
            mask = torch.full((obs, obs), torch.finfo(w8.dtype).min)
            cond = torch.arange(mask.size(-1))
            mask.masked_fill_(cond < (cond + 1).view(mask.size(-1), 1), 0)
            w8[:, -obs:, -obs:] += mask[None, :, :]
            w8 = torch.nn.functional.softmax(w8, dim=-1, dtype=torch.float32)
            votes = w8[:, -obs:, :-obs].sum(dim=-2).mean(dim=0)
            smooth = F.max_pool1d(votes[None], kernel_size=self.width, padding=self.width // 2, stride=1)[0]
            top = smooth.topk(max(0, min(view.budget - obs, n - obs)), dim=-1).indices
            picked.append(torch.cat([top, torch.arange(n - obs, n)]).sort().values)
        return Keep(tuple(picked))
