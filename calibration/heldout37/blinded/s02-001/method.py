"""Late Voice: question-aware prefill eviction in which the question's later tokens count for more."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class LateVoice(EvictionMethod):
    name = "late_voice"
    query_window = 16          # used only when the question span is not handed over
    question_queries = True
    floor = 0.25               # the question's first token weighs this much, its last 1
    sinks = 4
    kernel = 5

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        probs = view.attention()                                  # (H_q, N, T)
        n = probs.shape[1]
        ramp = torch.linspace(self.floor, 1.0, n, device=probs.device) if n > 1 else probs.new_ones(1)
        score = view.group(torch.einsum("hnt,n->ht", probs, ramp), "mean")
        score = F.avg_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                             count_include_pad=False)[:, 0]
        score[:, : self.sinks] = float("inf")
        first_q = view.query_positions.min().to(view.positions.device)
        score = score.masked_fill(view.positions >= first_q, float("inf"))   # the question itself stays
        return Keep.from_topk(score, view.budget, view.valid)
