"""FINCH (Corallo & Papotti, 2024, TACL, arXiv 2408.00167): prompt-guided. The question's queries (the tokens after
the context) attend over the cache; each key's attention is summed over the question queries and divided by how
many of them see it, averaged over the KV head's query heads; the top positions are kept, and the question itself
always stays. FINCH reads the document chunk by chunk (``chunk_length``, default None = one shot, as kvpress's
FinchPress) and re-rotates the kept keys; neither changes which tokens a one-shot prefill keeps here, so the score is
computed once over the whole prompt. On board A the window is exactly the question span (``question_queries``);
without a question (board B) it is the last ``query_window`` prompt queries. Without queries: recency.
Settings: pa_finch; pa_finch?query_window=32; pa_finch?query_window=64&question_queries=False
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class FINCH(EvictionMethod):
    name = "pa_finch"
    paper: ClassVar[str] = "FINCH"
    question_queries = True
    query_window = 1  # board A: the question span is handed over whole; elsewhere the last query
    normalise = True  # divide each key's sum by the number of window queries that see it

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        assert view.query_positions is not None
        summed = view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)
        if self.normalise:
            seen = (view.query_positions[None, None, :] >= view.positions[:, :, None]).sum(-1)
            summed = summed / seen.clamp_min(1)
        window = view.positions >= view.query_positions.min()
        return Keep.from_topk(summed.masked_fill(window, float("inf")), view.budget, view.valid)
