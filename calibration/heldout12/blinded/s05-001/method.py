"""Trailing-context dilation (board A).

Question-aware eviction ranks tokens by how much the question reads them, then smooths the ranking with a
symmetric max-pool (SnapKV) so that a read token keeps its neighbours. In retrieval prompts the neighbour that
matters is mostly on one side: the question matches the *key* of a fact ("the special number for X is"), and the
answer is in the tokens right after the match, which the question itself barely reads. We therefore add a
one-sided dilation: every token also inherits (at 0.8) the strongest score among the 4 tokens before it.

    score_t = max( maxpool_3(a)_t , 0.8 * max(a_{t-4}, ..., a_t) )

where a is the attention of the question span and the closing 32 prompt rows, summed over the rows and averaged
over each KV head's query heads. The closing 16 prompt rows and four opening tokens are always kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469): question/window scoring and pooling are theirs; the opening
tokens follow StreamingLLM (Xiao et al., 2023, arXiv 2309.17453). The one-sided dilation is our addition.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class TrailingDilation(EvictionMethod):
    name = "trailing_dilation"
    query_window = 32
    question_queries = True
    reach = 4
    carry = 0.8
    opening = 4
    closing = 16

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        a = view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)
        sym = F.max_pool1d(a[:, None], 3, stride=1, padding=1)[:, 0]
        back = F.max_pool1d(F.pad(a, (self.reach, 0), value=0.0)[:, None], self.reach + 1, stride=1)[:, 0]
        score = torch.maximum(sym, self.carry * back)
        fixed = (view.positions > view.positions.max() - self.closing) | (view.positions < self.opening)
        score = torch.where(fixed, 1e9 + view.positions.float(), score)
        return Keep.from_topk(score, view.budget)
