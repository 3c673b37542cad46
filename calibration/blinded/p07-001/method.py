import torch

from harness.api import EvictionMethod, Keep, LayerView


def _cut(x: torch.Tensor, a: int, b: int) -> torch.Tensor:
    return x[a:b, ...]


class AnchorTail(EvictionMethod):
    name = "anchor_tail"
    head_size = 4

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            seq = torch.nonzero(valid[h]).flatten()
            n = seq.numel()
            tail_size = max(0, min(view.budget, n) - self.head_size)
            if n <= self.head_size + tail_size:
                out.append(seq)
                continue
            out.append(torch.cat([_cut(seq, 0, self.head_size), _cut(seq, n - tail_size, n)], dim=0))
        return Keep(tuple(out))
