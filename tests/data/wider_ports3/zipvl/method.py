"""Sharp and blurry: a layer decides for itself how many tokens matter, the fewest that hold most of the closing
queries' pull; those keep sharp keys, the rest only a coarse copy, and the pull over that cache ranks the tokens."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _coarse(x: torch.Tensor, levels: int = 3) -> torch.Tensor:
    lo = x.amin(dim=-1, keepdim=True)
    step = (x.amax(dim=-1, keepdim=True) - lo).clamp_min(1e-6) / levels
    return torch.round((x - lo) / step) * step + lo


class SharpBlurry(EvictionMethod):
    name = "sharp_blurry"
    query_window = 32
    share = 0.9

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        q = view.group(view.queries.float(), "mean")
        pull = torch.softmax(q @ k.transpose(1, 2) * view.model.scale, dim=-1).mean(dim=1)
        ordered, _ = pull.sort(dim=-1, descending=True)
        running = ordered.cumsum(dim=-1) / ordered.sum(dim=-1, keepdim=True)
        need = (running < self.share).sum(dim=-1) + 1
        cut = ordered.gather(1, (need - 1).clamp(min=0)[:, None])
        sharp = pull >= cut
        mixed = torch.where(sharp[..., None], k, _coarse(k))
        again = torch.softmax(q @ mixed.transpose(1, 2) * view.model.scale, dim=-1).mean(dim=1)
        return Keep.from_topk(again, view.budget, view.valid)
