"""Successor completion (board A).

When a question reads a token heavily, what it needs next is usually the token *after* it: the question matches a
key phrase ("the special magic number for X is"), and the answer sits right behind the match. Symmetric pooling
(SnapKV's max-pool) spends budget on both sides of a hit; we spend it on the forward side only.

1. Score every token by the attention of the question rows and the last 16 prompt rows (summed over rows,
   averaged over each KV head's query heads), as SnapKV does, without pooling.
2. Take half of the free budget as seeds, best first.
3. Give every seed its successor (the next position), in seed order, while budget lasts.
4. Fill what is left by score.

The question and the last rows are always kept, as are the four opening tokens. Builds on SnapKV (Li et al., 2024,
arXiv 2404.14469); ChunkKV (arXiv 2502.00299) keeps whole fixed chunks, where we keep a hit and the token after it.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SuccessorCompletion(EvictionMethod):
    name = "successor_completion"
    query_window = 16
    question_queries = True
    opening = 4
    seed_share = 0.5

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        score = view.group(view.attention(reduce="sum"), "mean")
        fixed = (view.positions >= view.query_positions.min()) | (view.positions < self.opening)
        out = []
        for h in range(view.n_kv_heads):
            keep = fixed[h].clone()
            if int(keep.sum()) >= b:
                out.append(keep.nonzero().flatten()[-b:])
                continue
            free = b - int(keep.sum())
            s = score[h].masked_fill(keep, float("-inf"))
            seeds = s.topk(max(1, int(free * self.seed_share))).indices
            keep[seeds] = True
            room = b - int(keep.sum())
            for i in seeds.tolist():  # best seed first
                if room == 0:
                    break
                j = i + 1
                if j < t and not bool(keep[j]):
                    keep[j] = True
                    room -= 1
            if room > 0:
                s = score[h].masked_fill(keep, float("-inf"))
                keep[s.topk(room).indices] = True
            out.append(keep.nonzero().flatten())
        return Keep(tuple(out))
