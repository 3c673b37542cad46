"""Group-summed, length-adaptive window attention (board A)."""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class _Ledger:
    """Bookkeeping of which layers this process has served."""

    def __init__(self):
        self.calls: dict[int, int] = {}

    def note(self, layer: int) -> None:
        self.calls[layer] = self.calls.get(layer, 0) + 1

    def complete(self, first: int) -> bool:
        return self.calls.get(first, 0) > 0


class GroupAdaptiveWindow(EvictionMethod):
    name = "group_adaptive_window"
    question_queries = True
    query_window = 32

    def __init__(self):
        self._ledger = _Ledger()

    @staticmethod
    def _kernel(n: int) -> int:
        k = int(math.log2(max(2, n)))
        return k if k % 2 == 1 else k + 1

    def _main(self, view: LayerView) -> torch.Tensor:
        probs = view.attention(reduce="sum")                        # (H_q, T)
        s = view.group(probs, "sum")                                # the whole group votes together
        k = self._kernel(view.n_tokens)
        return F.max_pool1d(s[:, None], k, stride=1, padding=k // 2)[:, 0]

    def _spare(self, view: LayerView) -> torch.Tensor:
        last = view.queries[:, -1:].float()
        g = view.model.group_size
        kk = F.normalize(view.keys.float(), dim=-1)
        vv = F.normalize(view.values.float(), dim=-1)
        agree = (kk * vv).sum(-1)
        lead = view.group(torch.einsum("hqd,htd->ht", last, view.keys.float().repeat_interleave(g, 0)), "mean")
        return lead.sigmoid() + agree

    def select(self, view: LayerView) -> Keep:
        first = view.model.attention_layers[0] if view.model.attention_layers else 0
        self._ledger.note(view.layer)
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._main(view) if self._ledger.complete(first) else self._spare(view)
        score = score.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
