"""Switchyard: every query head is routed to the reading of the question that fits it, then the routes are merged.

Some heads read the context in coherent stretches: a coarse preview (the question's mean query against each
stretch's mean key) already tells where their mass goes. Others ignore the coarse picture and instead fire on a few
fixed columns or on fixed distances behind the reader. For every query head the coarse preview is compared with
the head's real stretch-level distribution; when the two agree the head votes for whole stretches, otherwise for
columns and distances. Each vote picks the smallest set that covers ``coverage`` of the head's mass.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView

_EPS = 1e-12


def _leading_set(dist: torch.Tensor, coverage: float) -> torch.Tensor:
    """Boolean mask of the fewest entries of each row of ``dist`` (rows sum to 1) whose mass reaches ``coverage``."""
    ordered, order = dist.sort(dim=-1, descending=True)
    before = ordered.cumsum(dim=-1) - ordered
    take = before < coverage
    return torch.zeros_like(take).scatter(-1, order, take)


def _normalised(x: torch.Tensor) -> torch.Tensor:
    return x / x.sum(dim=-1, keepdim=True).clamp_min(_EPS)


class Switchyard(EvictionMethod):
    name = "switchyard"
    query_window = 16
    question_queries = True
    stretch = 16          # entries per stretch
    agreement = 0.1       # Jensen-Shannon distance below which the coarse preview is trusted
    coverage = 0.9

    def _votes(self, view: LayerView) -> torch.Tensor:
        h_kv, t, g = view.n_kv_heads, view.n_tokens, view.model.group_size
        valid = view.valid_mask()
        rows = view.attention()                                       # (H_q, N, T)
        column = rows.sum(dim=1)                                      # (H_q, T)
        n_st = -(-t // self.stretch)
        pad = n_st * self.stretch - t
        real = _normalised(F.pad(column, (0, pad)).view(-1, n_st, self.stretch).sum(-1))   # (H_q, stretches)

        vmask = F.pad(valid.float(), (0, pad)).view(h_kv, n_st, self.stretch, 1)
        k_sum = (F.pad(view.keys.float(), (0, 0, 0, pad)).view(h_kv, n_st, self.stretch, -1) * vmask).sum(2)
        k_cnt = vmask.sum(2)
        k_bar = k_sum / k_cnt.clamp_min(1)                             # (H_kv, stretches, D)
        q_bar = view.queries.float().mean(dim=1).view(h_kv, g, -1)     # (H_kv, g, D)
        coarse = torch.matmul(q_bar, k_bar.transpose(1, 2)) * view.model.scale
        coarse = coarse.masked_fill(k_cnt.view(h_kv, 1, n_st) == 0, float("-inf")).softmax(-1).reshape(-1, n_st)

        mid = 0.5 * (coarse + real)
        js = 0.5 * (torch.special.xlogy(coarse, coarse) - torch.special.xlogy(coarse, mid)).sum(-1) \
            + 0.5 * (torch.special.xlogy(real, real) - torch.special.xlogy(real, mid)).sum(-1)
        trust = js.clamp_min(0).sqrt() < self.agreement                # (H_q,)

        share = _normalised(column)
        # stretch route: the leading stretches of the coarse preview, refined by the head's own columns
        lead = _leading_set(coarse, self.coverage).float()
        by_stretch = lead.repeat_interleave(self.stretch, dim=1)[:, :t] + share / share.amax(-1, keepdim=True).clamp_min(_EPS)

        # column + distance route
        qpos = view.query_positions
        pos = view.positions.repeat_interleave(g, dim=0)              # (H_q, T)
        behind = (qpos.view(1, -1, 1) - pos.unsqueeze(1)).clamp_min(0)  # (H_q, N, T)
        reach = int(behind.max()) + 1
        per_dist = torch.zeros(rows.shape[0], reach).scatter_add_(1, behind.flatten(1), rows.flatten(1))
        per_dist = _normalised(per_dist)
        dist_lead = _leading_set(per_dist, self.coverage).float()
        from_last = (int(qpos.max()) - pos).clamp(0, reach - 1)
        by_dist = dist_lead.gather(1, from_last)
        by_column = _leading_set(share, self.coverage).float()
        by_lines = by_column + by_dist + share / share.amax(-1, keepdim=True).clamp_min(_EPS)

        votes = torch.where(trust[:, None], by_stretch, by_lines)
        return view.group(votes, "mean")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        votes = self._votes(view)
        pinned = (view.positions < 4) | (view.positions >= view.query_positions.min())
        votes = votes.masked_fill(pinned, float("inf"))
        return Keep.from_topk(votes, view.budget, view.valid)
