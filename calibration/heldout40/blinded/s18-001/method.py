"""Third Look: a token is worth keeping if the context's re-reading looks at it hard at least three times.

KVzip scores a token by the largest attention any query of the reconstruction pass pays it. One look can be a
fluke (a query that happens to land on a token it copies once). Here the score is the third-largest attention a
token receives over the re-reading queries (per query head, then maxed over a KV head's group): a token needs
three strong looks to rank high. The running top three are kept as the pass's queries are processed in chunks,
so nothing of size queries x tokens is ever held. The first token is always kept. Builds on KVzip.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ThirdLook(EvictionMethod):
    name = "third_look"
    reconstruction_queries = True
    looks = 3
    chunk = 128

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = view.queries
        h_q, t = q.shape[0], view.n_tokens
        best = torch.zeros(h_q, self.looks, t, device=view.keys.device)
        for start in range(0, q.shape[1], self.chunk):
            qc = q[:, start: start + self.chunk]
            attn = view.attention(qc)                                   # (H_q, c, T), no causal mask here
            best = torch.cat([best, attn], dim=1).topk(self.looks, dim=1).values
        score = view.group(best[:, -1], "max")
        score[:, 0] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
