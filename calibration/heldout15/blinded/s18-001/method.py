"""Distance-debiased window attention (board B_online, query-agnostic prefill).

Window attention over a long context decays with distance: the closing rows attend more to whatever is near them,
whatever it is. On board B the questions come later and are equally likely to be about the start of the context, so
a distance trend in the scores is a bias, not information. We estimate the trend from the scores themselves and
divide it out, partly.

- Observed: the closing 64 context rows' causal attention, summed over the rows, averaged over the KV head's query
  heads.
- Expected: the mean observed score of tokens at a similar distance from the window (bins of log2 distance), per
  head.
- Score: geometric mean of the observed score and the observed / expected ratio, i.e. observed / sqrt(expected), so a
  token that stands out among its distance peers rises, without discarding the raw level entirely; max-pooled over 5.
- The closing 64 rows and four opening tokens are kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for the window scores and pooling and on StreamingLLM (Xiao et
al., 2023, arXiv 2309.17453) for the opening tokens; the distance normalisation is our change, and a small one.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class DistanceDebiased(EvictionMethod):
    name = "distance_debiased"
    query_window = 64
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        obs = view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)
        valid = view.valid_mask()
        wstart = int(view.query_positions.min())
        dist = (wstart - view.positions).clamp_min(1).float()
        bins = torch.log2(dist).floor().long().clamp(min=0)
        n_bins = int(bins.max()) + 1
        score = torch.zeros_like(obs)
        for h in range(view.n_kv_heads):
            m = valid[h]
            tot = torch.zeros(n_bins).index_add_(0, bins[h][m], obs[h][m])
            cnt = torch.zeros(n_bins).index_add_(0, bins[h][m], torch.ones(int(m.sum())))
            expected = (tot / cnt.clamp_min(1))[bins[h]]
            score[h] = obs[h] / expected.clamp_min(1e-9).sqrt()
        score = F.max_pool1d(score[:, None], 5, stride=1, padding=2)[:, 0]
        pinned = (view.positions < self.opening) | (view.positions >= wstart)
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
