"""Word of mouth: a token matters if tokens that matter look at it; the standing of every token is passed along the
attention links until it settles, and the best-standing tokens stay."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class WordOfMouth(EvictionMethod):
    name = "word_of_mouth"
    query_window = 1 << 20
    rounds = 12
    stay = 0.85

    def _links(self, view):
        q = view.queries.float()
        k = view.keys.float().repeat_interleave(view.model.group_size, dim=0)
        logits = q @ k.transpose(1, 2) * view.model.scale
        n = logits.shape[-1]
        future = torch.ones(n, n, dtype=torch.bool).triu(1)
        w = torch.softmax(logits.masked_fill(future, float("-inf")), dim=-1)
        return view.group(w, "mean")

    def select(self, view: LayerView) -> Keep:
        links = self._links(view)
        n = links.shape[-1]
        standing = torch.ones(links.shape[0], n) / n
        for _ in range(self.rounds):
            passed = torch.bmm(standing.unsqueeze(1), links).squeeze(1)
            standing = self.stay * passed + (1.0 - self.stay) / n
        return Keep.from_topk(standing, view.budget, view.valid)
