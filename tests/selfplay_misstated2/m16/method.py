"""Principal query direction from the context's own window (board B_online)."""

import torch

from harness import EvictionMethod, Keep, LayerView


class WindowPrincipalDirection(EvictionMethod):
    name = "window_principal_direction"
    query_window = 64
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        assert view.query_positions is not None
        q = view.queries.float()                                      # (H_q, N, D)
        _, _, vh = torch.linalg.svd(q, full_matrices=False)           # vh: (H_q, r, D)
        direction = vh[:, 0]                                          # (H_q, D) top right singular vector
        sign = torch.sign((q @ direction[:, :, None]).mean(dim=(1, 2)))
        direction = direction * torch.where(sign == 0, torch.ones_like(sign), sign)[:, None]
        keys = view.keys.float().repeat_interleave(view.model.group_size, dim=0)   # (H_q, T, D)
        proj = torch.einsum("htd,hd->ht", keys, direction)
        scores = view.group(proj, "mean")                             # (H_kv, T)
        window = view.positions >= view.query_positions.min()
        scores = scores.masked_fill(window | (view.positions < self.n_sink), float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
