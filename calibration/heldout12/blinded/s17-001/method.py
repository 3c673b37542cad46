"""Two-horizon rank fusion (board B_online).

The closing rows of a context read it differently depending on how far back they are taken: the last handful
of rows mostly read what the next question is likely to continue, a longer window also reads the structure of
the whole document. Picking one window length commits to one of the two. We score tokens with both, a short
horizon (last 16 context rows) and a long one (last 128 rows), each summed over its rows, averaged over the KV
head's query heads and max-pooled (kernel 5), and fuse the two rankings with reciprocal-rank fusion:

    score_t = 1 / (60 + rank_short(t)) + 1 / (60 + rank_long(t))

Rank fusion needs no calibration between two score scales. The last 16 context tokens and four opening tokens
are always kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for window scoring and pooling; reciprocal-rank fusion is
Cormack, Clarke and Buettcher (SIGIR 2009); the opening tokens follow StreamingLLM (arXiv 2309.17453).
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _rank(x: torch.Tensor) -> torch.Tensor:
    order = x.argsort(dim=-1, descending=True)
    r = torch.empty_like(order)
    r.scatter_(1, order, torch.arange(x.shape[-1], device=x.device).expand_as(order))
    return r.float()


class TwoHorizonFusion(EvictionMethod):
    name = "two_horizon_fusion"
    query_window = 128
    short = 16
    k_rrf = 60.0
    tail = 16
    opening = 4

    def _score(self, view: LayerView, rows: int) -> torch.Tensor:
        q = view.queries[:, -rows:]
        qpos = view.query_positions[-rows:]
        h_kv, t, d = view.keys.shape
        g = view.model.group_size
        logits = torch.einsum("hgnd,htd->hgnt", q.float().reshape(h_kv, g, -1, d), view.keys.float())
        logits = logits * view.model.scale
        logits = logits.masked_fill(view.positions[:, None, None, :] > qpos[None, None, :, None], float("-inf"))
        a = logits.softmax(-1).nan_to_num(0.0).sum(2).mean(1)
        return F.max_pool1d(a[:, None], 5, stride=1, padding=2)[:, 0]

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rs = _rank(self._score(view, min(self.short, view.queries.shape[1])))
        rl = _rank(self._score(view, view.queries.shape[1]))
        score = 1.0 / (self.k_rrf + rs) + 1.0 / (self.k_rrf + rl)
        fixed = view.positions < self.opening
        fixed[:, n - self.tail:] = True
        score = torch.where(fixed, 1e9 + view.positions.float(), score)
        return Keep.from_topk(score, view.budget)
