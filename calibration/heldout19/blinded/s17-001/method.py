"""Principal-direction retention (board B_offline).

The re-reading pass of the offline stage produces thousands of query vectors per head. Their un-rotated form is
dominated by one direction; a key's component along that direction (sign fixed so that typical queries point along
it) predicts how much attention any future query will give it, with no softmax and no question.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _dominant(rows: torch.Tensor) -> torch.Tensor:
    """First right singular vector of rows (N, D), oriented along the rows' mean."""
    _, _, vh = torch.linalg.svd(rows, full_matrices=False)
    u = vh[0]
    return u if float(rows.mean(dim=0) @ u) >= 0 else -u


class PrincipalDirection(EvictionMethod):
    name = "principal_direction"
    reconstruction_queries = True
    keep_last = 16

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.queries is None:
            return Keep.from_topk(-view.keys.float().norm(dim=-1), view.budget, view.valid)
        g = view.model.group_size
        h_q, n_q, d = view.queries.shape
        qpos = view.query_positions if view.query_positions is not None else torch.arange(n_q)
        plain_q = view.rotate(view.queries.float(), -qpos.to(view.queries.device))  # (H_q, N, D) un-rotated
        plain_k = torch.stack([view.rotate(view.keys[h].float(), -view.positions[h]) for h in range(view.n_kv_heads)])
        score = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        for qh in range(h_q):
            u = _dominant(plain_q[qh])
            score[qh // g] += plain_k[qh // g] @ u
        newest = view.positions.masked_fill(~view.valid_mask(), -1).amax(dim=-1, keepdim=True)
        score[view.positions > newest - self.keep_last] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
