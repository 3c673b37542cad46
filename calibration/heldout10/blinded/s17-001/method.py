"""Question echo (board A).

A needle that answers a question usually repeats some of the question's words, and the model's keys for those words
resemble the question's own keys. We add that resemblance to question attention: for each context token, the
largest cosine between its key and the keys of the question span (same KV head), rank-normalised, is blended with
the rank-normalised question attention (0.3 / 0.7). The question span and the first 4 tokens are always kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for question attention and StreamingLLM (Xiao et al., 2023,
arXiv 2309.17453) for sinks; the key-echo term is ours.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView

SINKS = 4
ECHO = 0.3


def _rank01(x: torch.Tensor) -> torch.Tensor:
    r = x.argsort(dim=-1).argsort(dim=-1).float()
    return r / max(1, x.shape[-1] - 1)


class QuestionEcho(EvictionMethod):
    name = "question_echo"
    query_window = 8
    question_queries = True

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q0 = int(view.query_positions.min())
        in_q = view.positions[0] >= q0
        attn = view.group(view.attention(reduce="sum"), "mean")            # (H_kv, T)
        unit = F.normalize(view.keys.float(), dim=-1)
        echo = torch.einsum("htd,hqd->htq", unit, unit[:, in_q]).amax(-1)   # (H_kv, T)
        score = (1 - ECHO) * _rank01(attn) + ECHO * _rank01(echo)
        fixed = (view.positions >= q0) | (view.positions < SINKS)
        return Keep.from_topk(score.masked_fill(fixed, float("inf")), view.budget)
