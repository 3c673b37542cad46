"""Volume Keep: keep the tokens that add the most volume to the question-weighted key space.

Each key is weighted by how strongly the question aligns with it (the square root of its question attention,
averaged over the query heads of its KV head). A token's score is its weighted key's leverage in the weighted
key matrix, i.e. its share of the log-volume spanned by all weighted keys: tokens that are both relevant to the
question and not explained by the other relevant tokens come first. The question span is kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class VolumeKeep(EvictionMethod):
    name = "volume_keep"
    question_queries = True
    ridge = 1e-3

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        align = view.group(view.attention(reduce="mean"), "mean").clamp_min(0).sqrt()   # (H_kv, T)
        wk = view.keys.float() * align[..., None]                                      # (H_kv, T, D)
        gram = wk.transpose(1, 2) @ wk
        d = gram.shape[-1]
        gram = gram + self.ridge * gram.diagonal(dim1=-2, dim2=-1).mean(-1)[:, None, None] * torch.eye(d)
        chol = torch.linalg.cholesky(gram)
        z = torch.cholesky_solve(wk.transpose(1, 2), chol)                              # (H_kv, D, T)
        scores = (wk * z.transpose(1, 2)).sum(-1)
        if view.query_positions is not None:
            scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
