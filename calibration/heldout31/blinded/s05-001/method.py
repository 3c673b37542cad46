"""Load Bearing: keep the rows that hold the cache's geometry up.

Some tokens are load-bearing: remove them and the span of the keys, or of the values, visibly shrinks; others sit
inside directions many tokens already cover. Per KV head, an orthonormal basis of the keys (reduced QR) gives each
token its share of the key span (the squared norm of its row of Q); the same for the values; a token's load is the
geometric mean of its two shares. The heaviest tokens are kept, plus the first 4 and the newest 16. Only the
cache is read, so the compression needs no question and runs once per context.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class LoadBearing(EvictionMethod):
    name = "load_bearing"
    head = 4
    recent = 16

    @staticmethod
    def _share(x: torch.Tensor) -> torch.Tensor:
        """(T, D) -> (T,): each row's squared length in an orthonormal basis of the column space."""
        basis, _ = torch.linalg.qr(x.double(), mode="reduced")
        return basis.pow(2).sum(dim=-1).float()

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        load = torch.full(view.keys.shape[:2], float("-inf"), device=view.keys.device)
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(1)
            k_share = self._share(view.keys[h, idx])
            v_share = self._share(view.values[h, idx])
            load[h, idx] = (k_share * v_share).clamp_min(0).sqrt()
        counts = valid.sum(dim=1)
        order = torch.arange(view.n_tokens, device=load.device)[None, :]
        fixed = (order < self.head) | ((order >= (counts[:, None] - self.recent)) & valid)
        return Keep.from_topk(load.masked_fill(fixed, float("inf")), view.budget, view.valid)
