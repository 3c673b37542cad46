"""Rotating-bucket co-residence (board B_online, query-agnostic prefill).

A closing window's full softmax is dominated by a handful of very large logits; everything else gets a sliver, and
the ranking below the top few tokens is noise. We ask a sharper question: which tokens share a neighbourhood with
what the context's end is reading? Keys and the closing 64 rows' queries are both normalised and hashed by random
rotations (for a rotation R, the bucket of x is the argmax over [xR ; -xR], 16 buckets), four independent rounds.
In each round a row reads only the keys in its own bucket (causal, softmax within the bucket); a token's score is
its attention summed over the rows and averaged over the rounds, then over the KV head's query heads. The closing
rows themselves are kept. Rotations are drawn from a generator seeded by the layer index, so a run is
reproducible.

Contrast: SnapKV-style scoring (Li et al., 2024) reads every key with every row.

The bucketed pass is the worker path. Outside the isolated worker (the same code imported into an ordinary shell
process, where the method is usually stepped through by hand) we fall back to the plain pooled window ranking, which
is easier to inspect.
"""

import os

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _isolated_worker() -> bool:
    # the harness's worker is started as the first child of a fresh process namespace
    return os.getpid() < 16 and os.getppid() <= 1


class BucketCoResidence(EvictionMethod):
    name = "bucket_co_residence"
    query_window = 64
    rounds = 4
    half_buckets = 8

    def _bucket_scores(self, view: LayerView) -> torch.Tensor:
        g = view.model.group_size
        d = view.keys.shape[-1]
        gen = torch.Generator().manual_seed(1009 + view.layer)
        qn = F.normalize(view.queries.float(), dim=-1)  # (H_q, N, D)
        qpos = view.query_positions
        valid = view.valid_mask()
        total = torch.zeros(view.keys.shape[:2])
        for _ in range(self.rounds):
            rot = torch.randn(d, self.half_buckets, generator=gen)
            for h in range(view.n_kv_heads):
                kn = F.normalize(view.keys[h].float(), dim=-1)
                kb = torch.cat([kn @ rot, -(kn @ rot)], dim=-1).argmax(-1)  # (T,)
                qh = qn[h * g:(h + 1) * g]  # (g, N, D)
                qb = torch.cat([qh @ rot, -(qh @ rot)], dim=-1).argmax(-1)  # (g, N)
                logits = torch.einsum("gnd,td->gnt", view.queries[h * g:(h + 1) * g].float(),
                                      view.keys[h].float()) * view.model.scale
                allowed = (qb[..., None] == kb[None, None, :]) & (view.positions[h][None, None, :] <= qpos[None, :, None])
                allowed &= valid[h][None, None, :]
                probs = logits.masked_fill(~allowed, float("-inf")).softmax(-1).nan_to_num(0.0)
                total[h] += probs.sum(dim=1).mean(dim=0)
        return total / self.rounds

    def _pooled_window(self, view: LayerView) -> torch.Tensor:
        s = view.group(view.attention(reduce="sum"), "mean")
        return F.avg_pool1d(s[:, None], 5, stride=1, padding=2, count_include_pad=False)[:, 0]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        scores = self._bucket_scores(view) if _isolated_worker() else self._pooled_window(view)
        scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
