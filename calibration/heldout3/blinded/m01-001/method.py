import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _spread(block: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    floor = ref.min(dim=1, keepdim=True).values
    ceil = ref.max(dim=1, keepdim=True).values
    return ((block - floor) / (ceil - floor + 1e-6)).std(dim=-1)


class Method(EvictionMethod):
    """Look-ahead contrast: each stretch of the context is judged against the stretch that follows it."""

    name = "lookahead_contrast"
    lead = 4
    stretch = 64

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        v = view.values.float()
        n_heads, n_tok, _ = k.shape
        out = torch.full((n_heads, n_tok), float("inf"), device=k.device)
        cur = self.lead
        while cur + 2 * self.stretch <= n_tok:
            nxt = cur + self.stretch
            s = _spread(k[:, cur:nxt], k[:, nxt:nxt + self.stretch])
            s = s + _spread(v[:, cur:nxt], v[:, nxt:nxt + self.stretch])
            out[:, cur:nxt] = torch.softmax(s, dim=-1)
            cur = nxt
        return Keep.from_topk(out, view.budget, view.valid)
