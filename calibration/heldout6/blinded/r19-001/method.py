"""Typicality-weighted window (board B_online).

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469): on board B the closing context queries stand in for the
unknown questions. Not every closing query is a good stand-in: the end of a document is often boilerplate
(closing phrases, formatting) whose queries read little that matters. Here each of the last 64 context queries is
weighted by how typical it is of the whole context's queries: w = softmax over the window of cos(q, mean query of
the head) / 0.1, so the window's attention profile follows the queries that resemble what the document asks of
itself. The context-wide mean query is computed from every context query (as Expected Attention, Devoto et al.,
2025, arXiv 2510.00636, uses context query statistics, though for a Gaussian model of future queries). Profile
averaged over the KV head's query heads, average-pooled over 5 tokens; the window and the first 4 tokens
(StreamingLLM, arXiv 2309.17453) are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class TypicalityWindow(EvictionMethod):
    name = "typicality_window"
    query_window = 1 << 20      # every context query, for the context-wide mean
    window = 64
    temperature = 0.1
    n_sink = 4
    kernel = 5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q_all = view.queries.float()                                              # (H_q, N, D)
        centre = F.normalize(q_all.mean(dim=1), dim=-1)                           # (H_q, D)
        w = min(self.window, q_all.shape[1])
        recent_q = q_all[:, -w:]
        cos = torch.einsum("hnd,hd->hn", F.normalize(recent_q, dim=-1), centre)
        weight = (cos / self.temperature).softmax(dim=-1)                          # (H_q, w)
        hidden = view.query_positions[-w:]
        attn = view.attention(view.queries[:, -w:])                                # (H_q, w, T), not causal
        attn = attn.masked_fill((view.positions[:, None, :] > hidden[None, :, None]).repeat_interleave(
            view.model.group_size, dim=0), 0.0)
        profile = view.group(torch.einsum("hn,hnt->ht", weight, attn), "mean")
        profile = F.avg_pool1d(profile[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                               count_include_pad=False)[:, 0]
        protect = (view.positions >= int(hidden.min())) | (view.positions < self.n_sink)
        return Keep.from_topk(profile.masked_fill(protect, float("inf")), view.budget, view.valid)
