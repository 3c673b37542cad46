"""Window readout displacement (board B_online).

A token matters to the extent that removing it would move what the closing context reads out of the cache. For
every token we estimate that displacement from the last 32 context queries, with the readout reconstructed in a
compact per-head basis so that the estimate is smooth rather than dominated by a few noisy channels; the tokens
whose removal would displace the window's readout most are kept, plus the window itself.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _basis(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Principal directions of x (N, D), strongest first, and their share of the energy."""
    c = x - x.mean(dim=0, keepdim=True)
    evals, evecs = torch.linalg.eigh(c.T @ c / max(1, x.shape[0] - 1))
    evals, evecs = evals.flip(0).clamp_min(0.0), evecs.flip(1)
    return evecs, evals / evals.sum().clamp_min(1e-12)


def _nested_ranks(shares: list[torch.Tensor], total: int) -> list[int]:
    """Hand out `total` basis directions over heads, one at a time, to the head whose next direction adds most."""
    ranks = [1] * len(shares)
    for _ in range(max(0, total - len(shares))):
        gains = [float(s[r]) if r < s.numel() else -1.0 for s, r in zip(shares, ranks)]
        best = max(range(len(gains)), key=gains.__getitem__)
        if gains[best] < 0:
            break
        ranks[best] += 1
    return ranks


class WindowReadoutDisplacement(EvictionMethod):
    name = "window_readout_displacement"
    query_window = 32
    rank_share = 0.25
    kernel = 5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h, t, d = view.keys.shape
        g = view.model.group_size
        valid = view.valid_mask()
        keys = view.keys.float()
        bases, shares = [], []
        for i in range(h):
            b, s = _basis(keys[i][valid[i]])
            bases.append(b)
            shares.append(s)
        ranks = _nested_ranks(shares, max(h, int(self.rank_share * d * h)))
        q = view.queries.float()
        qpos = view.query_positions.to(view.positions.device)
        score = torch.zeros(h, t, device=keys.device)
        for i in range(h):
            p = bases[i][:, : ranks[i]]                                     # (D, r)
            kp = keys[i] @ p                                                # (T, r)
            qp = q[i * g:(i + 1) * g] @ p                                   # (g, N, r)
            logits = torch.einsum("gnr,tr->gnt", qp, kp) * view.model.scale
            hide = (view.positions[i][None, None, :] > qpos[None, :, None]) | ~valid[i][None, None, :]
            att = logits.masked_fill(hide, float("-inf")).softmax(dim=-1).nan_to_num(0.0)
            score[i] = att.sum(dim=1).mean(dim=0)
        score = F.avg_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        score = score.masked_fill(view.positions >= int(qpos.min()), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
