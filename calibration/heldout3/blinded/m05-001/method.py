import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _drop_impact(p: torch.Tensor, vals: torch.Tensor) -> torch.Tensor:
    mixed = torch.einsum("ht,htd->hd", p, vals)                   # what the head outputs now
    gap = torch.linalg.norm(vals - mixed[:, None, :], dim=-1)     # how far each value is from it
    return p / (1.0 - p).clamp(min=1e-4) * gap


class Method(EvictionMethod):
    """Counterfactual drop impact: how much the head's output would move if a token left."""

    name = "drop_impact"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        p = view.attention(reduce="mean")                          # (Hq, T)
        vals = view.values.float().repeat_interleave(view.model.group_size, dim=0)
        score = view.group(_drop_impact(p.float(), vals), "mean")
        return Keep.from_topk(score, view.budget, view.valid)
