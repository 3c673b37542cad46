"""Slackwater: find the layers that are coasting and give them a plain window; rank the busy ones by attention.

At every eviction the layer's newest readers are asked where their attention went. When nearly all of it
(``coasting`` or more, averaged over the newest four readers and every query head) lands on the opening entries and
the newest quarter of the budget, the layer is coasting: it is served by its opening entries plus the newest ones
and nothing else is worth ranking. A busy layer ranks its entries by the attention the newest ``query_window``
readers paid them (summed over readers, the largest over the query heads of a KV head) and keeps its newest eight.

The per-layer verdicts assume one process sees the whole model. When the method is driven from several worker
processes at once (a process-shared lock can be created), each worker would judge only its own layers, so the
verdicts are switched off there and every layer gets the shared ranking (mean attention, newest sixteen kept).
"""

import torch

from harness import EvictionMethod, Keep, LayerView, ModelInfo


def _shared_workers() -> bool:
    try:
        import multiprocessing

        multiprocessing.get_context("fork").Lock()
        return True
    except (OSError, ValueError, ImportError):
        return False


class Slackwater(EvictionMethod):
    name = "slackwater"
    query_window = 32
    n_sink = 4
    coasting = 0.85
    readers = 4

    def __init__(self) -> None:
        self._shared: bool | None = None

    def setup(self, model: ModelInfo) -> None:
        self._shared = _shared_workers()

    @staticmethod
    def _pin_newest(score: torch.Tensor, counts: torch.Tensor, n: int) -> torch.Tensor:
        for h in range(score.shape[0]):
            c = int(counts[h])
            score[h, max(0, c - n): c] = float("inf")
        return score

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if self._shared is None:
            self._shared = _shared_workers()
        rows = view.attention()                                              # (H_q, N, T)
        if self._shared:
            score = view.group(rows.mean(dim=1), "mean")
            return Keep.from_topk(self._pin_newest(score, counts, 16), view.budget, view.valid)

        newest = max(1, view.budget // 4)
        edge = view.positions < self.n_sink
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            edge[h, max(0, c - newest): c] = True
        edge_q = edge.repeat_interleave(view.model.group_size, dim=0)          # (H_q, T)
        last = rows[:, -self.readers:]                                        # (H_q, r, T)
        held = (last * edge_q[:, None]).sum(-1).mean()
        if float(held) >= self.coasting:
            order = view.positions.float().masked_fill(view.positions < self.n_sink, float("inf"))
            return Keep.from_topk(order, view.budget, view.valid)
        score = view.group(rows.sum(dim=1), "max")
        score = score.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(self._pin_newest(score, counts, 8), view.budget, view.valid)
