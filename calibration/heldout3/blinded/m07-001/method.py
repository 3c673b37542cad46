import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Entropy-budgeted heads."""

    name = "entropy_budget"
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        attn = view.attention()                                    # (Hq, N, T)
        ent = -(attn.clamp(min=1e-9).log() * attn).sum(-1).mean(-1)
        self.last_entropy = ent                                    # logged for the plots
        votes = view.group(attn.sum(dim=1), "mean")
        votes = F.max_pool1d(votes[:, None], 5, stride=1, padding=2)[:, 0]
        votes[:, -attn.shape[1]:] = float("inf")
        return Keep.from_topk(votes, view.budget, view.valid)
