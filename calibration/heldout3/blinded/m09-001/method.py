import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Attention sinks plus a recent window (StreamingLLM)."""

    name = "sink_window"
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        n_kv, n_tok, _ = view.keys.shape
        score = torch.arange(n_tok, device=view.keys.device, dtype=torch.float32).expand(n_kv, n_tok).clone()
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
