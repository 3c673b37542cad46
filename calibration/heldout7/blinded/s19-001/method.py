"""Strided observation queries (board B_online).

Query-agnostic eviction from the context's own queries. SnapKV's observation window (arXiv 2404.14469) uses only the
last queries of the context, which on board B describe the context's end, not what a later question will need;
H2O (arXiv 2306.14048) sums the attention of every query, which favours early tokens simply because more queries
can see them. We take a middle road: about 64 observation queries spread evenly over the whole context (every
s-th prompt query) plus the last 16, each attending causally; a token's score is its mean attention over the
sampled queries that can see it (the visibility normalisation of kvpress's ObservedAttentionPress, a normalised
H2O), averaged over the KV head's query heads. The first 4 tokens (sinks) and the last 16 are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class StridedObservation(EvictionMethod):
    name = "strided_observation"
    query_window = 1 << 20      # every context query is handed over; we sample from them
    n_spread = 64
    n_tail = 16
    n_sink = 4

    def _sample(self, qpos: torch.Tensor) -> torch.Tensor:
        n = qpos.numel()
        stride = max(1, -(-n // self.n_spread))
        idx = torch.arange(0, n, stride, device=qpos.device)
        tail = torch.arange(max(0, n - self.n_tail), n, device=qpos.device)
        return torch.unique(torch.cat([idx, tail]))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        pick = self._sample(view.query_positions)
        q = view.queries[:, pick].float()                                    # (H_q, S, D)
        qpos = view.query_positions[pick]
        h_kv, t, d = view.keys.shape
        g = view.model.group_size
        rows = q.reshape(h_kv, -1, d)
        logits = torch.einsum("hnd,htd->hnt", rows, view.keys.float()) * view.model.scale
        rq = qpos.repeat(g)
        sees = (view.positions[:, None, :] <= rq[None, :, None]) & view.valid_mask()[:, None, :]
        probs = logits.masked_fill(~sees, float("-inf")).softmax(dim=-1).nan_to_num(0.0)
        score = probs.sum(dim=1) / sees.sum(dim=1).clamp_min(1).float()      # mean over the rows that see it
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        for h in range(h_kv):
            n = int(counts[h])
            score[h, : min(self.n_sink, n)] = float("inf")
            score[h, max(0, n - self.n_tail): n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
