"""Balanced-plan retention (board A): the question's reading of the context is planned per head at the level of
context segments, and the cache keeps the segments the plan routes most of the question to."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _segment_sum(x: torch.Tensor, size: int) -> torch.Tensor:
    """(..., T) -> (..., ceil(T / size)) sums over consecutive segments."""
    t = x.shape[-1]
    pad = (-t) % size
    if pad:
        x = torch.cat([x, x.new_zeros(*x.shape[:-1], pad)], dim=-1)
    return x.view(*x.shape[:-1], -1, size).sum(dim=-1)


def _segment_mean(k: torch.Tensor, size: int) -> torch.Tensor:
    """(T, D) -> (S, D) mean key per segment."""
    t = k.shape[0]
    counts = _segment_sum(torch.ones(1, t, device=k.device), size)[0]
    sums = _segment_sum(k.t(), size).t()
    return sums / counts[:, None]


def _divergence(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    m = 0.5 * (p + q)
    kl = lambda a, b: (a * ((a + 1e-12).log() - (b + 1e-12).log())).sum(dim=-1)  # noqa: E731
    return 0.5 * kl(p, m) + 0.5 * kl(q, m)


class BalancedPlanRetention(EvictionMethod):
    name = "balanced_plan_retention"
    query_window = 32
    question_queries = True
    segment = 32
    coverage = 0.9          # a head's plan must cover this share of its question mass
    agreement = 0.1         # how close the coarse plan must be to the exact one to be trusted

    def _head_scores(self, view: LayerView, attn: torch.Tensor, qh: int, kv: int) -> torch.Tensor:
        """(T,) token scores for one query head."""
        keys = view.keys[kv].float()
        q = view.queries[qh].float()
        exact_tok = attn[qh].mean(dim=0)                                         # (T,)
        exact_seg = _segment_sum(exact_tok[None], self.segment)[0]
        exact_seg = exact_seg / exact_seg.sum().clamp_min(1e-12)
        coarse = (q.mean(dim=0) @ _segment_mean(keys, self.segment).t()) * view.model.scale
        coarse = coarse.softmax(dim=-1)
        trusted = float(_divergence(exact_seg, coarse).clamp_min(0).sqrt()) < self.agreement
        if trusted:
            seg_score = coarse
            tok = seg_score.repeat_interleave(self.segment)[: keys.shape[0]]
        else:
            # column + diagonal reading of the exact attention
            qpos = view.query_positions
            kpos = view.positions[kv]
            column = attn[qh].sum(dim=0)
            dist = (qpos[:, None] - kpos[None, :])
            ok = dist >= 0
            diag = torch.zeros(int(dist.max()) + 2, device=keys.device)
            diag.index_add_(0, dist[ok], attn[qh][ok])
            end = int(qpos.max())
            diag_tok = diag[(end - kpos).clamp(0, diag.numel() - 1)]
            tok = column / column.sum().clamp_min(1e-12) + diag_tok / diag_tok.sum().clamp_min(1e-12)
            seg_score = _segment_sum(tok[None], self.segment)[0]
            seg_score = seg_score / seg_score.sum().clamp_min(1e-12)
        # the segments needed to reach the coverage share get a bonus (kept first)
        order = seg_score.sort(descending=True)
        needed = int((order.values.cumsum(0) < self.coverage).sum()) + 1
        bonus = torch.zeros_like(seg_score)
        bonus[order.indices[:needed]] = 1.0
        return tok / tok.sum().clamp_min(1e-12) + bonus.repeat_interleave(self.segment)[: keys.shape[0]]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                                                  # (H_q, N, T)
        g = view.model.group_size
        score = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        for kv in range(view.n_kv_heads):
            for j in range(g):
                score[kv] += self._head_scores(view, attn, kv * g + j, kv) / g
        score = score.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
