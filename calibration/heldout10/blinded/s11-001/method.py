"""Mass-adaptive head allocation for question-aware prefill eviction (board A).

Heads differ in how peaked their reading of the question is: a head whose question attention sits on a handful of
tokens needs few of them, a head that reads broadly needs many. We therefore size each KV head's share of the
layer budget by how many tokens it takes to cover most of its question-attention mass, then fill each head with
its best tokens.

Per KV head: the question span plus the last 8 prompt queries attend causally over the context; the probabilities
are averaged over the queries and over the head's query group. A first pass keeps the 2 x budget best candidates;
within them, the head's coverage count is the smallest number of candidates whose mass reaches 0.92 of the
candidates' mass. Budgets are split in proportion to the coverage counts (at least 4 tokens per head), the question
span and the first 2 tokens are kept in every head.
"""

import torch

from harness import EvictionMethod, Keep, LayerView

COVER = 0.92
WIDEN = 2
MIN_SHARE = 4
SINKS = 2


def _coverage(prob: torch.Tensor, cover: float) -> int:
    """Smallest count of entries of ``prob`` (sorted descending) reaching ``cover`` of its total."""
    if prob.numel() == 0:
        return 0
    srt = prob.sort(descending=True).values
    run = srt.cumsum(0)
    need = cover * float(run[-1])
    return int((run < need).sum()) + 1


def _split(total: int, weights: list[float], floor: int, caps: list[int]) -> list[int]:
    n = len(weights)
    base = [min(floor, c) for c in caps]
    left = total - sum(base)
    wsum = sum(weights) or 1.0
    share = [min(caps[i], base[i] + int(left * weights[i] / wsum)) for i in range(n)]
    spare = total - sum(share)
    order = sorted(range(n), key=lambda i: -weights[i])
    while spare > 0 and any(share[i] < caps[i] for i in order):
        for i in order:
            if spare and share[i] < caps[i]:
                share[i] += 1
                spare -= 1
    return share


class MassAdaptiveAllocation(EvictionMethod):
    name = "mass_adaptive_allocation"
    query_window = 8
    question_queries = True

    def select(self, view: LayerView) -> Keep:
        n_kv, t = view.n_kv_heads, view.n_tokens
        if view.budget >= t or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q_start = int(view.query_positions.min())
        reading = view.group(view.attention(reduce="mean"), "mean")          # (H_kv, T)
        fixed = (view.positions >= q_start) | (view.positions < SINKS)
        n_fixed = int(fixed[0].sum())
        room = view.budget * n_kv - n_fixed * n_kv
        if room <= 0:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        counts, caps = [], []
        for h in range(n_kv):
            free = reading[h].masked_fill(fixed[h], 0.0)
            cand = free.topk(min(t - n_fixed, WIDEN * (view.budget - n_fixed) + 1)).values
            counts.append(float(max(1, _coverage(cand, COVER))))
            caps.append(t - n_fixed)
        per_head = _split(room, counts, MIN_SHARE, caps)
        out = []
        for h in range(n_kv):
            sc = reading[h].masked_fill(fixed[h], float("inf"))
            k = min(t, n_fixed + per_head[h])
            out.append(sc.topk(k).indices.sort().values)
        return Keep(tuple(out))
