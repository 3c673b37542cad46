"""Question echo (board A).

On board A the question is in the cache too, and its own keys say something the question's attention does not: a
needle is usually introduced with the same words the question later uses ("the special magic number for X is"),
so the context tokens that *repeat* the question have keys very close to the question's keys once the rotary phase
is taken out. Attention alone can miss them when the question's queries are busy with the answer format.

Score per KV head = question attention (question span plus the last 8 prompt queries, causal, summed over the
queries, averaged over the group; SnapKV's signal, Li et al., 2024, arXiv 2404.14469), scaled to [0, 1] per head,
plus 0.5 x echo, where echo is a context key's largest cosine with any question-span key, both un-rotated
(clipped at 0 and also scaled to [0, 1] per head). Max-pooled over 3 tokens so an echo keeps its neighbours.
The question span and the first 4 tokens (StreamingLLM's sinks, Xiao et al., 2023, arXiv 2309.17453) are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _unit_max(x: torch.Tensor) -> torch.Tensor:
    return x / x.amax(dim=1, keepdim=True).clamp_min(1e-12)


class QuestionEcho(EvictionMethod):
    name = "question_echo"
    query_window = 8
    question_queries = True
    echo_weight = 0.5
    kernel = 3
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        first_q = int(view.query_positions.min())
        att = _unit_max(view.group(view.attention(reduce="sum"), "mean"))
        pos = view.positions[0]
        flat = F.normalize(view.rotate(view.keys.float(), -pos), dim=-1)      # (H_kv, T, D) un-rotated
        question = pos >= first_q
        echo = torch.einsum("htd,hsd->hts", flat, flat[:, question]).amax(dim=-1).clamp_min(0.0)
        echo = _unit_max(echo.masked_fill(question[None, :], 0.0))
        score = att + self.echo_weight * echo
        score = F.max_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        pinned = (view.positions < self.n_sink) | (view.positions >= first_q)
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
