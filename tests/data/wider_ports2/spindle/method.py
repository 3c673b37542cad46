"""Two halves of the stack: near-identical keys are folded into the entry that stands for most of them (a small
dictionary of keys), and the closing queries' attention decides which entries stay."""

import torch

from harness.api import EvictionMethod, Keep, LayerView, Rewrite


class TwoHalves(EvictionMethod):
    name = "two_halves"
    query_window = 16
    bar = 0.95

    def _book(self, k: torch.Tensor):
        u = k / k.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        link = ((u @ u.transpose(1, 2)) > self.bar).float()
        reach = link.sum(dim=-1)
        owner = (link * reach[:, None, :]).argmax(dim=-1)
        return reach, owner

    def select(self, view: LayerView):
        h = view.n_kv_heads
        k, v = view.keys.float(), view.values.float()
        reach, owner = self._book(k)
        idx = owner[..., None].expand_as(k)
        sum_k = torch.zeros_like(k).scatter_add_(1, idx, k)
        sum_v = torch.zeros_like(v).scatter_add_(1, idx, v)
        cnt = torch.zeros_like(reach).scatter_add_(1, owner, torch.ones_like(reach)).clamp_min(1)[..., None]
        q = view.queries.float().reshape(h, -1, k.shape[-1])
        att = torch.softmax(q @ k.transpose(1, 2) * view.model.scale, dim=-1).sum(dim=1)
        keep = Keep.from_topk(att * (owner == torch.arange(k.shape[1])).float(), view.budget, view.valid)
        return Rewrite(keys=tuple((sum_k / cnt)[i, keep.indices[i]] for i in range(h)),
                       values=tuple((sum_v / cnt)[i, keep.indices[i]] for i in range(h)), keep=keep)
