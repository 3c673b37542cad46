"""Runner-Up Recall: reconstruction attention, scored by the second-strongest look a token gets.

KVzip keeps the tokens that some query of its "repeat the context" pass attends to most: the maximum over the
pass. One stray spike is then enough to keep a token. Here a token's score is its second-largest attention
weight over the pass (per query head, then the largest over a KV head's query heads): it must be read strongly
at least twice. The first 4 tokens are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RunnerUpRecall(EvictionMethod):
    name = "runner_up_recall"
    reconstruction_queries = True
    chunk = 128
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h_q, n, _ = view.queries.shape
        t = view.n_tokens
        best = torch.zeros(h_q, t, device=view.keys.device)
        second = torch.zeros(h_q, t, device=view.keys.device)
        for s in range(0, n, self.chunk):
            w = view.attention(view.queries[:, s:s + self.chunk])      # (H_q, c, T), the pass sees every key
            top = w.topk(min(2, w.shape[1]), dim=1).values                # (H_q, <=2, T)
            c1 = top[:, 0]
            c2 = top[:, 1] if top.shape[1] > 1 else torch.zeros_like(c1)
            # merge the running (best, second) with this chunk's (c1, c2)
            new_best = torch.maximum(best, c1)
            second = torch.maximum(torch.minimum(best, c1), torch.maximum(second, c2))
            best = new_best
        score = view.group(second, "max")
        score = score.masked_fill(view.positions < self.sinks, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
