import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Sketch residual keeper."""

    name = "sketch_residual"
    rank = 4

    def select(self, view: LayerView) -> Keep:
        n_kv, n_tok, _ = view.keys.shape
        ones = torch.ones(n_kv, n_tok, device=view.keys.device)
        order = ones.cumsum(dim=-1)                                 # 1..T
        score = order.clone()
        score[:, : self.rank] = float(n_tok) * 2.0
        return Keep.from_topk(score, view.budget, view.valid)
