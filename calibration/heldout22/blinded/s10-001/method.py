"""Stride skeleton (board C, decode-time cap).

Builds on TOVA (Oren et al., 2024, arXiv 2401.06104): rank tokens by the attention the newest rows give them, and
on StreamingLLM (Xiao et al., 2023, arXiv 2309.17453) for keeping the newest tokens. Pure attention ranking can
empty long stretches of a reasoning trace entirely, and a later step that refers back to such a stretch then finds
nothing of it. Here a tenth of the room is reserved for a skeleton: the trace is cut into strides of 32 positions
and each stride keeps its single best-attended token; the rest of the room goes by attention (the newest 8 rows,
max over rows and over the group), and the newest 16 tokens are always kept. Related in spirit to ChunkKV
(arXiv 2502.00299), which keeps whole chunks; this keeps one representative per stride.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class StrideSkeleton(EvictionMethod):
    name = "stride_skeleton"
    query_window = 8
    stride = 32
    skeleton_share = 0.1
    newest = 16

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        a = view.group(view.attention(reduce="max"), "max")
        ok = view.valid_mask()
        score = a.clone()
        room = int(self.skeleton_share * view.budget)
        for h in range(view.n_kv_heads):
            c = int(ok[h].sum())
            stride_of = view.positions[h, :c] // self.stride
            best = torch.full((int(stride_of.max()) + 1,), -1.0, device=a.device)
            best = best.scatter_reduce(0, stride_of, a[h, :c], reduce="amax")
            is_best = (a[h, :c] == best[stride_of]) & (a[h, :c] > 0)
            cand = torch.nonzero(is_best).flatten()
            if cand.numel() > room:
                cand = cand[a[h, cand].topk(room).indices]
            score[h, cand] = 1e3 + a[h, cand]
            score[h, max(0, c - self.newest): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
