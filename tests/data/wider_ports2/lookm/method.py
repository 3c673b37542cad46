"""Prompt first: the prompt's own tokens say which cached tokens matter (their attention); every token let go is
folded into the kept token whose key points the same way."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView, Rewrite


class PromptFirst(EvictionMethod):
    name = "prompt_first"
    question_queries = True

    def select(self, view: LayerView):
        h = view.n_kv_heads
        k, v = view.keys.float(), view.values.float()
        q = view.queries.float().reshape(h, -1, k.shape[-1])
        pull = torch.softmax(q @ k.transpose(1, 2) * view.model.scale, dim=-1).mean(dim=1)
        keep = Keep.from_topk(pull, view.budget, view.valid)
        unit = F.normalize(k, dim=-1)
        keys, vals = [], []
        for i in range(h):
            kept = keep.indices[i]
            gone = torch.ones(k.shape[1], dtype=torch.bool)
            gone[kept] = False
            vk = v[i, kept].clone()
            if gone.any():
                near = (unit[i, gone] @ unit[i, kept].T).argmax(dim=-1)
                vk.index_add_(0, near, v[i, gone])
                vk = vk / torch.bincount(near, minlength=kept.numel()).add(1)[:, None]
            keys.append(k[i, kept])
            vals.append(vk)
        return Rewrite(keys=tuple(keys), values=tuple(vals), keep=keep)
