"""Rank fusion across window depths (board B_online, query-agnostic prefill).

SnapKV's closing window is one choice of depth: a short window reads what the last sentence is about, a long one
reads the last few paragraphs. On board B the questions come later and could be about either. Rather than pick one
depth, we ask three and fuse their rankings.

- Readers: the closing 8, 32 and 128 context rows. For each, the causal attention summed over its rows, averaged
  over the KV head's query heads, max-pooled over 5 tokens.
- Fusion: reciprocal rank fusion, score = sum over readers of 1 / (60 + rank), ranks within each head
  (Cormack, Clarke and Buettcher, SIGIR 2009), so no reader's scale dominates.
- The closing 32 rows and four opening tokens are kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for window scoring and pooling and on StreamingLLM (Xiao et
al., 2023, arXiv 2309.17453) for the opening tokens; reciprocal rank fusion is a standard retrieval tool. Using it
across window depths is our change, and a small one.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class DepthRankFusion(EvictionMethod):
    name = "depth_rank_fusion"
    query_window = 128
    depths = (8, 32, 128)
    k_rrf = 60.0
    tail = 32
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        order = view.query_positions.argsort()
        valid = view.valid_mask()
        fused = torch.zeros(view.keys.shape[:2])
        for d in self.depths:
            rows = order[-d:]
            q = view.queries[:, rows]
            qpos = view.query_positions[rows]
            attn = view.attention(q)  # unmasked; apply causality for these rows
            seen = (view.positions[:, None, :] <= qpos[None, :, None]).repeat_interleave(view.model.group_size, 0)
            attn = attn * seen
            attn = attn / attn.sum(-1, keepdim=True).clamp_min(1e-12)
            s = view.group(attn.sum(1), "mean")
            s = F.max_pool1d(s[:, None], 5, stride=1, padding=2)[:, 0].masked_fill(~valid, float("-inf"))
            rank = torch.empty_like(s)
            rank.scatter_(1, s.argsort(dim=1, descending=True),
                          torch.arange(s.shape[1], dtype=torch.float32).expand_as(s).contiguous())
            fused += 1.0 / (self.k_rrf + rank + 1.0)
        tail_from = int(view.query_positions.max()) - self.tail + 1
        pinned = (view.positions < self.opening) | (view.positions >= tail_from)
        return Keep.from_topk(fused.masked_fill(pinned, float("inf")), view.budget, view.valid)
