"""Spread-capped question attention (board A).

The ranking is SnapKV's question-aware attention (arXiv 2404.14469): the question span and the last 8 prompt
queries attend causally over the context, summed over the queries, averaged over the KV head's query heads, max-
pooled over 5 positions (SnapKV's pooling). The change is only in how the budget is spent: the context is cut into
segments of 64 tokens and, in a first pass, no segment may take more than its cap (twice its even share of the
free budget, at least 4 tokens) of the top tokens; whatever budget is left after the first pass goes to the best
remaining tokens anywhere. At low budgets one dense region (a run of similar keys around a distractor) can otherwise
absorb most of the budget through pooling, leaving nothing for a second needle elsewhere.
The question/closing span and the first 4 tokens (StreamingLLM's sinks, arXiv 2309.17453) are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SpreadCappedAttention(EvictionMethod):
    name = "spread_capped_attention"
    query_window = 8
    question_queries = True
    segment = 64
    cap_factor = 2.0
    min_cap = 4
    kernel = 5
    n_sink = 4

    def scores(self, view: LayerView) -> torch.Tensor:
        s = view.group(view.attention(reduce="sum"), "mean")
        return F.max_pool1d(s[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]

    def _capped(self, score: torch.Tensor, fixed: torch.Tensor, real: torch.Tensor, budget: int) -> torch.Tensor:
        n = real.numel()
        keep = fixed.clone()
        room = budget - int(keep.sum())
        if room <= 0:
            return torch.nonzero(keep).flatten()[:budget]
        n_seg = max(1, (n + self.segment - 1) // self.segment)
        cap = max(self.min_cap, int(self.cap_factor * room / n_seg))
        taken = [0] * n_seg
        fixed_list = keep.tolist()
        first = []
        order = score.masked_fill(keep, float("-inf")).argsort(descending=True)
        for i in order.tolist():
            if room == 0 or fixed_list[i]:
                break
            s = i // self.segment
            if taken[s] < cap:
                first.append(i)
                taken[s] += 1
                room -= 1
        if first:
            keep[torch.tensor(first, dtype=torch.long)] = True
        if room > 0:
            rest = score.masked_fill(keep, float("-inf")).topk(room).indices
            keep[rest] = True
        return torch.nonzero(keep).flatten()

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self.scores(view)
        valid = view.valid_mask()
        closing = view.positions >= int(view.query_positions.min())
        out = []
        for h in range(view.n_kv_heads):
            real = torch.nonzero(valid[h]).flatten()
            fixed = (closing[h, real] | (view.positions[h, real] < self.n_sink)).cpu()
            picked = self._capped(score[h, real].cpu(), fixed, real, min(view.budget, real.numel()))
            out.append(real[picked.to(real.device)].sort().values)
        return Keep(tuple(out))
