"""Restless Attention: keep the tokens the context's end keeps coming back to, and the ones it cannot settle on.

The last positions of the context read it; for each token we take the average attention those readers pay it
and how much that attention moves from one reader to the next (its variance across the readers). A token that
is read steadily is useful; a token whose reading flickers is one the model is still deciding about, and cheap to
keep. The two are added (the restlessness with a large weight, since variances of probabilities are tiny),
smoothed over neighbours, and the top tokens are kept beside a reserved tail of the newest positions.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class RestlessAttention(EvictionMethod):
    name = "restless_attention"
    query_window = 32
    restlessness = 200.0
    kernel = 5
    tail_share = 0.25

    def _tail(self, view: LayerView) -> int:
        return max(self.query_window, int(view.n_tokens * self.tail_share))

    def select(self, view: LayerView) -> Keep:
        newest = view.positions.float()
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(newest, view.budget, view.valid)
        tail = self._tail(view)
        if view.budget <= tail:
            return Keep.from_topk(newest, view.budget, view.valid)
        readers = view.attention()                                  # (H_q, W, T)
        steady = readers.mean(dim=1)
        restless = readers.var(dim=1, unbiased=False)
        score = view.group(steady + self.restlessness * restless, "mean")
        score = F.avg_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                             count_include_pad=False)[:, 0]
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, max(0, n - tail): n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
