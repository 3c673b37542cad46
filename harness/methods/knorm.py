"""K-norm (Devoto et al., 2024, arXiv 2406.11430): keep the keys with the lowest L2 norm (they tend to
receive the most attention). Query-free, per KV head. The paper's code exempts layers 0-1 from compression;
here, as in kvpress's KnormPress, every layer keeps the board's budget (an exemption would overspend it)."""

from harness.api import EvictionMethod, Keep, LayerView


class KNorm(EvictionMethod):
    name = "knorm"

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(-view.keys.float().norm(dim=-1), view.budget, view.valid)
