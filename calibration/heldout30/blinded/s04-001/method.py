"""Sharp Readers: question attention where the question rows that know where to look count more.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469): the question's rows rank the context by the attention they
pay it. In a question most rows are function words and template tokens whose attention is spread thin; a few
rows (the entity, the key the question asks about) look sharply at a handful of places. SnapKV sums all rows
alike. Here each row is weighted, per query head, by exp(-entropy) of its attention (the inverse of how many
tokens it effectively reads), the weights normalised over the rows, so sharp rows carry the vote. The weighted
sums are averaged over each KV head's query heads and max-pooled over 5 neighbours, as SnapKV pools. The first
4 tokens (StreamingLLM, arXiv 2309.17453) and the question rows are kept.
"""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class SharpReaders(EvictionMethod):
    name = "sharp_readers"
    question_queries = True
    n_sink = 4
    kernel = 5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                                   # (H_q, N, T)
        spread = torch.special.entr(attn).sum(dim=-1)             # (H_q, N): entropy of each row
        weight = torch.softmax(-spread, dim=-1)                   # exp(-H), normalised over the rows
        score = torch.einsum("hn,hnt->ht", weight, attn)
        score = view.group(score, "mean")
        score = F.max_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        pinned = (view.positions < self.n_sink) | (view.positions >= view.query_positions.min())
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
