"""Two-sided redundancy for reasoning traces (board C).

R-KV scores a cached token by importance minus redundancy, where redundancy is how similar its *key* is to the
other keys. A reasoning trace repeats itself in two ways: it re-states the same thing (similar keys, which R-KV
catches) and it re-derives the same content in different words (different keys, similar values: what the
tokens contribute once read is the same). We measure redundancy on both sides and average them:

    redundancy = ( R(keys) + R(values) ) / 2
    score      = 0.1 * importance - 0.9 * redundancy

R(x) is R-KV's redundancy computed on vectors x: cosine similarities with the diagonal zeroed and each token's
newest similar copy (cosine > 0.5) zeroed so the newest copy is protected, averaged over the tokens, softmaxed
over the sequence. Importance is R-KV's: the mean attention of the newest 8 queries, averaged over the KV head's
query heads, max-pooled with a kernel of 7. The newest 8 tokens are always kept. Runs whenever a layer reaches its
cap (and on a prompt that alone exceeds it).

Builds directly on R-KV (Cai et al., 2025, arXiv 2505.24133): importance, the redundancy construction and the
mixing are theirs, with lambda raised from 0.07 to 0.1; the value-side redundancy is our addition.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _redundancy(x: torch.Tensor, valid: torch.Tensor, threshold: float) -> torch.Tensor:
    u = F.normalize(x.float(), dim=-1)
    sim = torch.einsum("htd,hsd->hts", u, u)
    n = sim.shape[-1]
    pair = valid[:, :, None] & valid[:, None, :]
    sim = sim.masked_fill(~pair | torch.eye(n, dtype=torch.bool, device=sim.device), 0.0)
    idx = torch.arange(n, device=sim.device).expand_as(sim)
    newest = torch.where(sim > threshold, idx, -1).amax(dim=-1)
    has = newest >= 0
    hh, tt = torch.nonzero(has, as_tuple=True)
    sim[hh, tt, newest[has]] = 0.0
    mean = sim.sum(dim=1) / valid.sum(dim=1, keepdim=True).clamp_min(1)
    return mean.masked_fill(~valid, float("-inf")).softmax(dim=-1)


class TwoSidedRedundancy(EvictionMethod):
    name = "two_sided_redundancy"
    query_window = 8
    kernel = 7
    mix = 0.1
    threshold = 0.5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        imp = view.group(view.attention().mean(dim=1), "mean")
        imp = F.max_pool1d(imp[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        red = 0.5 * (_redundancy(view.keys, valid, self.threshold) + _redundancy(view.values, valid, self.threshold))
        score = self.mix * imp - (1 - self.mix) * red
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - self.query_window): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
