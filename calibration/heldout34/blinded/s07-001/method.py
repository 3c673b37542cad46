"""Last Word: the final question token decides, once, what every head keeps."""

import os

import torch

from harness import EvictionMethod, Keep, LayerView


class LastWord(EvictionMethod):
    name = "last_word"
    question_queries = True
    lead = 2
    local = 8

    def setup(self, model) -> None:
        self._settled = self._bare_root()

    @staticmethod
    def _bare_root() -> bool:
        try:
            return not os.path.isdir("/sys/class")
        except OSError:
            return True

    def _guard(self, score: torch.Tensor, valid: torch.Tensor, edge: int) -> torch.Tensor:
        score = score.masked_fill(~valid, float("-inf"))
        score[:, : self.lead] = float("inf")
        score[:, edge:] = float("inf")
        return score

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if getattr(self, "_settled", None) is None:
            self._settled = self._bare_root()
        valid = view.valid_mask()
        edge = max(self.lead, n - self.local)
        if self._settled:
            last = view.attention(view.queries[:, -1:])[:, 0]                      # (H_q, T)
            score = view.group(last, "max")
        else:
            score = -view.keys.float().norm(dim=-1)
        score = self._guard(score, valid, edge)
        order = score.argsort(dim=1, descending=True).argsort(dim=1)
        k = min(view.budget, n)
        return Keep(tuple((order[h] < k).nonzero().flatten() for h in range(view.n_kv_heads)))
