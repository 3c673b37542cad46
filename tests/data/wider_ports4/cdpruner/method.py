"""Relevant-and-varied: the question's queries say how useful each entry is; among useful entries the cache prefers
ones unlike those already taken. Greedy: take the best, then down-weight every entry by its likeness to it."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class RelevantVaried(EvictionMethod):
    name = "relevant_varied"
    question_queries = True

    def select(self, view: LayerView) -> Keep:
        q = view.group(view.queries.float(), "mean").mean(dim=1)  # (H, D): the question, one direction per head
        k = view.keys.float()
        rel = torch.sigmoid(torch.einsum("hd,htd->ht", q, k) / k.shape[-1] ** 0.5)
        unit = F.normalize(k, dim=-1)
        like = unit @ unit.transpose(1, 2)
        out = []
        for h in range(view.n_kv_heads):
            gain = rel[h].clone()
            taken: list[int] = []
            for _ in range(min(view.budget, view.n_tokens)):
                i = int(gain.argmax())
                taken.append(i)
                gain = gain * (1.0 - like[h, i].clamp(0, 1) ** 2)
                gain[taken] = -1.0
            out.append(torch.tensor(sorted(taken), dtype=torch.long))
        return Keep(tuple(out))
