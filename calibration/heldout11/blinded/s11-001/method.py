"""Echo damping (board B_online).

Top-k on attention keeps near-duplicates: when one phrase is read heavily, its paraphrases and repetitions are read
heavily too, and the budget fills with echoes of a single fact. We select in rounds. Each round takes the best
remaining tokens by their current score; every token it takes then damps the scores of its closest look-alikes
(the ``neighbours`` keys with the highest cosine similarity to it) by a factor that grows with the similarity, so
the next round prefers tokens that add something new.

The starting score is the attention the last 32 context rows pay each token, averaged over each KV head's query
heads and smoothed (box of 7); those 32 rows are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class EchoDamping(EvictionMethod):
    name = "echo_damping"
    query_window = 32
    rounds = 4
    neighbours = 16
    damping = 0.5

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        base = view.group(view.attention(reduce="sum"), "mean")
        base = F.avg_pool1d(base[:, None], 7, stride=1, padding=3, count_include_pad=False)[:, 0]
        window = view.positions >= view.query_positions.min()
        unit = F.normalize(view.keys.float(), dim=-1)
        out = []
        for h in range(view.n_kv_heads):
            chosen = window[h].clone()
            score = base[h].masked_fill(chosen, float("-inf"))
            left = b - int(chosen.sum())
            if left <= 0:
                out.append(torch.nonzero(chosen).flatten()[-b:])
                continue
            sim = unit[h] @ unit[h].T
            sim.fill_diagonal_(0.0)
            per_round = -(-left // self.rounds)
            while left > 0:
                take = score.topk(min(per_round, left)).indices
                chosen[take] = True
                left -= take.numel()
                score[take] = float("-inf")
                near = sim[take].topk(min(self.neighbours, t - 1), dim=1)
                factor = torch.ones(t, device=score.device)
                shrink = 1.0 - self.damping * near.values.clamp_min(0)
                factor.scatter_reduce_(0, near.indices.flatten(), shrink.flatten(), reduce="amin")
                score = torch.where(torch.isinf(score), score, score * factor)
            out.append(torch.nonzero(chosen).flatten())
        return Keep(tuple(out))
