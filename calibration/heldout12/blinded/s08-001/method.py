"""RefreshKV-style refreshed top-K selection, ported to decode-time eviction (board C).

Port of RefreshKV (Xu, Goyal and Choi, "RefreshKV: Updating Small KV Cache During Long-form Generation",
arXiv 2411.05787, ACL 2025; first released as "Recycled Attention"). RefreshKV alternates full-attention steps
with steps over a small cache, and after every full step rebuilds the small cache from that step's attention
over the whole context (the top-K tokens per head); whether a step runs full attention is decided by how far the
current query has drifted from the query of the last full step.

What carries over: the selection rule (per KV head, the top tokens by the attention of the current query,
added over the head's query heads) and the drift test (if the newest query's cosine similarity to the query of
the last refresh, averaged over query heads, is at least 0.9, the stored ranking is reused; otherwise it is
recomputed from the newest query). Four opening tokens and the newest eighth of the budget are always kept.

Deviations, forced by the harness: the harness evicts, so the full context is not retained and a refresh can
only re-rank what is still cached (RefreshKV keeps the full cache and can bring tokens back); the refresh points
are the harness's eviction blocks rather than a fixed stride; tokens that arrived after the stored ranking was
made are kept by recency until the next refresh.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class RefreshTopK(EvictionMethod):
    name = "refresh_topk"
    query_window = 16
    drift = 0.9
    sinks = 4
    recent_share = 0.125

    def _fresh_scores(self, view: LayerView) -> torch.Tensor:
        att = view.attention(view.queries[:, -1:])[:, 0]  # (H_q, T): the newest query
        return view.group(att, "sum")

    def select(self, view: LayerView) -> Keep:
        n, b = view.n_tokens, view.budget
        if b >= n or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        q = view.queries[:, -1].float()
        last = view.state.get("refresh_q")
        reuse = False
        if last is not None and view.phase == "decode":
            cos = F.cosine_similarity(q, last.to(q.device), dim=-1).mean()
            reuse = bool(cos >= self.drift)
        if reuse:
            score = view.recall("refresh_rank", fill=1e8)  # newer than the ranking: kept until the next refresh
        else:
            score = self._fresh_scores(view)
            view.state["refresh_q"] = q.detach().clone()
        view.remember("refresh_rank", score)
        pinned = view.positions < self.sinks
        recent = max(1, int(b * self.recent_share))
        pinned[:, n - recent:] = True
        score = torch.where(pinned, 1e9 + view.positions.float(), score)
        return Keep.from_topk(score, b)
