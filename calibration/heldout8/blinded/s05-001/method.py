"""Anchor-and-extend spans (board A).

Question attention (SnapKV, Li et al., 2024, arXiv 2404.14469) finds the token where an answer starts, but answers
are usually several tokens long (a number, a multi-token name) and the attention on the continuation tokens is often
weaker than on distractors elsewhere, so a token-level top-k keeps the head of an answer and drops its tail. Fixed
pooling (SnapKV's kernel, ChunkKV's chunks) widens every selection by the same amount whether or not it is needed.
We grow spans adaptively instead: take the highest-scoring unkept token as an anchor, extend it to the right and to the
left while the neighbour's score is at least ``reach`` (0.5) of the anchor's, up to ``max_span`` (8) tokens, keep the
span, and repeat until the budget is spent. Scores are the causal attention of the question span plus the last 16
prompt queries, summed over the queries and averaged over the KV head's query heads. The question span and the first 4
tokens (StreamingLLM, arXiv 2309.17453) are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def grow_spans(score: list[float], taken: list[bool], budget: int, reach: float, max_span: int) -> list[bool]:
    n = len(score)
    order = sorted(range(n), key=lambda i: -score[i])
    room = budget - sum(taken)
    for a in order:
        if room <= 0:
            break
        if taken[a]:
            continue
        lo = hi = a
        bar = reach * score[a]
        while hi - lo + 1 < max_span:
            right = hi + 1 < n and not taken[hi + 1] and score[hi + 1] >= bar
            left = lo - 1 >= 0 and not taken[lo - 1] and score[lo - 1] >= bar
            if right and (not left or score[hi + 1] >= score[lo - 1]):
                hi += 1
            elif left:
                lo -= 1
            else:
                break
        for i in range(lo, hi + 1):
            if room <= 0:
                break
            if not taken[i]:
                taken[i] = True
                room -= 1
    return taken


class AnchorExtendSpans(EvictionMethod):
    name = "anchor_extend_spans"
    query_window = 16
    question_queries = True
    reach = 0.5
    max_span = 8
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = view.group(view.attention(reduce="sum"), "mean")          # (H_kv, T)
        valid = view.valid_mask()
        first_q = int(view.query_positions.min())
        out = []
        for h in range(view.n_kv_heads):
            real = torch.nonzero(valid[h]).flatten()
            pos = view.positions[h, real]
            fixed = ((pos < self.n_sink) | (pos >= first_q)).tolist()
            budget = min(view.budget, real.numel())
            if sum(fixed) >= budget:
                keep = torch.nonzero(torch.tensor(fixed)).flatten()[-budget:]
            else:
                taken = grow_spans(score[h, real].tolist(), list(fixed), budget, self.reach, self.max_span)
                keep = torch.nonzero(torch.tensor(taken)).flatten()
            out.append(real[keep.to(real.device)])
        return Keep(tuple(out))
