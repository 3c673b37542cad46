"""Principal-energy retention (board B_online): keys are ranked by how much of their energy lies in the head's
dominant subspace, with a tolerance band around the strongest key, so that the cache keeps the keys that carry
the head's main directions."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _principal_frame(sample: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Right singular vectors of a (n, D) sample and the column weight of the sample in that frame."""
    _, _, vh = torch.linalg.svd(sample, full_matrices=False)
    frame = vh.t()                                                   # (D, D) orthonormal
    weight = (sample @ frame).abs().sum(dim=0)                       # (D,)
    return frame, weight


class PrincipalEnergyRetention(EvictionMethod):
    name = "principal_energy_retention"
    query_window = 32
    kept_fraction = 0.3      # share of the frame's columns used
    band = 4.0               # tolerance below the strongest entry
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        g = view.model.group_size
        d = view.keys.shape[-1]
        r = max(1, int(self.kept_fraction * d))
        qpos = view.query_positions
        score = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        for kv in range(view.n_kv_heads):
            k = view.keys[kv].float()
            hidden = (view.positions[kv][None, :] > qpos[:, None]) | ~valid[kv][None, :]
            for j in range(g):
                sample = view.queries[kv * g + j].float()                      # (N, D)
                frame, weight = _principal_frame(sample)
                cols = weight.topk(r).indices
                qs = (sample @ frame)[:, cols]
                ks = (k @ frame)[:, cols]
                partial = (qs @ ks.t()) * view.model.scale                      # (N, T)
                partial = partial.masked_fill(hidden, float("-inf"))
                top = partial.amax(dim=-1, keepdim=True)
                inside = (partial > top - self.band) & ~hidden
                soft = partial.softmax(dim=-1).nan_to_num(0.0)
                score[kv] += inside.float().sum(dim=0) + soft.sum(dim=0)
        score = score.masked_fill(view.positions >= int(qpos.min()), float("inf"))
        score = score.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
