"""Echo-discounted question attention (board A).

A question often repeats itself: templated prompts restate the key ("What is the special magic number for X?
... the special magic number for X is"), and chat formatting adds runs of near-identical tokens. Each repeated
query row votes again for the same context tokens, so the ranking over-weights whatever the repeated phrase
points at. We discount echoes: each question row's weight is one over the number of question rows whose query
(per query head) has cosine at least 0.9 with it, so a phrase stated twice counts about once. Score = weighted
sum of the rows' attention, averaged over the KV head's query heads, max-pooled with kernel 5. The question span
and four opening tokens are kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469): question/window attention and pooling; opening tokens
follow StreamingLLM (Xiao et al., 2023, arXiv 2309.17453). The echo discount is ours.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class EchoDiscounted(EvictionMethod):
    name = "echo_discounted"
    query_window = 16
    question_queries = True
    echo_cos = 0.9

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = F.normalize(view.queries.float(), dim=-1)  # (H_q, N, D)
        twins = ((q @ q.transpose(1, 2)) >= self.echo_cos).float().sum(-1)  # (H_q, N), includes itself
        weight = 1.0 / twins.clamp_min(1.0)
        att = view.attention()  # (H_q, N, T)
        score = view.group((att * weight[:, :, None]).sum(1), "mean")
        score = F.max_pool1d(score[:, None], 5, stride=1, padding=2)[:, 0]
        fixed = view.positions >= int(view.query_positions.min())
        if int(fixed.sum(1).max()) > view.budget // 2:
            fixed = view.positions > int(view.positions.max()) - view.budget // 4
        fixed = fixed | ((view.positions >= 0) & (view.positions < min(4, view.budget // 8)))
        return Keep.from_topk(score.masked_fill(fixed, float("inf")), view.budget, view.valid)
