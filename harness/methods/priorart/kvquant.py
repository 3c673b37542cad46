"""KVQuant (Hooper et al., NeurIPS 2024, arXiv 2401.18079, "KVQuant: Towards 10 Million Context Length LLM Inference
with KV Cache Quantization"), its key quantisation read as a selection rule: keys are quantised *before* RoPE
(per-channel: the outlier channels stay aligned before the rotation mixes them) at a few bits, with a small share of
outlier entries kept exact (dense-and-sparse), and rotated forward again; the queries' attention over that low-bit
copy ranks the tokens. The paper's non-uniform levels (nuq, sensitivity-weighted k-means on calibration data) and
its per-channel outlier thresholds come from offline calibration; on one view, per KV head and channel, the
``outlier_share`` entries (the paper's 1 %) farthest from the channel's median are the sparse part, the rest is
quantised to 2^bits uniform levels between the inliers' min and max (the paper's 3-bit setting). Pre-RoPE keys:
the cached keys rotated back by their positions. The scoring query is the last prompt query (the window's attention
summed with ``query_window`` > 1), softmax summed over the KV head's query heads, top-k per KV head. Without queries
or without RoPE on the layer: recency.
Settings: pa_kvquant; pa_kvquant?bits=2; pa_kvquant?outlier_share=0.0; pa_kvquant?query_window=8
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class KVQuant(EvictionMethod):
    name = "pa_kvquant"
    paper: ClassVar[str] = "KVQuant"
    query_window = 1
    bits = 3
    outlier_share = 0.01

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens or view.rope is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h, t, d = view.keys.shape
        valid = view.valid_mask()
        pre = torch.stack([view.rotate(view.keys[i], -view.positions[i]) for i in range(h)])  # (H, T, D) pre-RoPE
        med = pre.masked_fill(~valid[..., None], float("nan")).nanmedian(dim=1, keepdim=True).values
        dev = (pre - med).abs().masked_fill(~valid[..., None], -1.0)
        n_out = int(round(self.outlier_share * t))
        outlier = torch.zeros_like(pre, dtype=torch.bool)
        if n_out:
            outlier.scatter_(1, dev.topk(n_out, dim=1).indices, True)
        inlier = ~outlier & valid[..., None]
        lo = pre.masked_fill(~inlier, float("inf")).amin(dim=1, keepdim=True)
        hi = pre.masked_fill(~inlier, float("-inf")).amax(dim=1, keepdim=True)
        levels = 2 ** self.bits - 1
        step = ((hi - lo) / levels).clamp_min(1e-8)
        low = ((pre - lo) / step).round().clamp(0, levels) * step + lo
        low = torch.where(outlier, pre, low)
        keys = torch.stack([view.rotate(low[i], view.positions[i]) for i in range(h)])
        g = view.model.group_size
        q = view.queries.float().reshape(h, g * view.queries.shape[1], d)
        logits = torch.matmul(q, keys.transpose(1, 2)) * view.model.scale
        if view.query_positions is not None:
            qp = view.query_positions.repeat(g)
            logits = logits.masked_fill(view.positions[:, None, :] > qp[None, :, None], float("-inf"))
        logits = logits.masked_fill(~valid[:, None, :], float("-inf"))
        scores = logits.softmax(dim=-1).nan_to_num(0.0).sum(dim=1)
        return Keep.from_topk(scores, view.budget, view.valid)
