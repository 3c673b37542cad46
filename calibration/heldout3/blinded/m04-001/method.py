import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Envelope bound: blocks of keys are scored by the largest dot product their channel envelope allows."""

    name = "envelope_bound"
    query_window = 1
    block = 16

    def select(self, view: LayerView) -> Keep:
        q = view.queries[:, -1].float()                            # (Hq, D)
        k = view.keys.float()
        g = view.model.group_size
        n_kv, n_tok, _ = k.shape
        score = torch.zeros(n_kv, n_tok, device=k.device)
        for s in range(0, n_tok, self.block):
            chunk = k[:, s:s + self.block]
            lo = chunk.min(dim=1).values.repeat_interleave(g, 0)   # (Hq, D)
            hi = chunk.max(dim=1).values.repeat_interleave(g, 0)
            bound = torch.maximum(q * lo, q * hi).sum(dim=-1)      # (Hq,)
            score[:, s:s + self.block] = bound.view(n_kv, g).max(dim=1).values[:, None]
        score = score + 1e-4 * torch.arange(n_tok, device=k.device) / n_tok
        return Keep.from_topk(score, view.budget, view.valid)
