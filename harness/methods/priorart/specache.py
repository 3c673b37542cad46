"""SpeCache (Jie et al., ICML 2025, arXiv 2503.16163, "SpeCache: Speculative Key-Value Caching for Efficient
Generation of LLMs"): the full cache is offloaded and a low-bit copy of the keys stays on the GPU; the query's
attention over that copy picks the top-k keys, which are fetched (kept) at full precision. The low-bit copy is
KIVI's key quantisation (the paper's 2-bit setting, 1-bit the smallest): asymmetric min-max per channel over groups
of ``group`` consecutive tokens, rounded to 2^bits levels and dequantised. The scoring query is the last prompt query
(``query_window`` > 1: the window's attention summed); softmax(q k_q^T / sqrt(d)) summed over the KV head's query
heads, top-k per KV head, nothing else protected. Without queries: recency.
Settings: pa_specache; pa_specache?bits=1; pa_specache?group=128; pa_specache?query_window=8
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class SpeCache(EvictionMethod):
    name = "pa_specache"
    paper: ClassVar[str] = "SpeCache"
    query_window = 1
    bits = 2
    group = 32  # tokens per quantisation group (KIVI's G)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        keys = view.keys.float()  # (H, T, D)
        h, t, d = keys.shape
        pad = (-t) % self.group
        k = torch.nn.functional.pad(keys, (0, 0, 0, pad)).view(h, -1, self.group, d)
        fill = torch.nn.functional.pad(torch.ones(t, device=keys.device), (0, pad)).view(-1, self.group)
        real = fill[None, :, :, None] > 0
        lo = k.masked_fill(~real, float("inf")).amin(dim=2, keepdim=True)
        hi = k.masked_fill(~real, float("-inf")).amax(dim=2, keepdim=True)
        step = ((hi - lo) / (2 ** self.bits - 1)).clamp_min(1e-8)
        low = (((k - lo) / step).round().clamp(0, 2 ** self.bits - 1) * step + lo).view(h, -1, d)[:, :t]
        g = view.model.group_size
        q = view.queries.float().reshape(h, g * view.queries.shape[1], d)
        logits = torch.matmul(q, low.transpose(1, 2)) * view.model.scale  # (H, g*w, T)
        if view.query_positions is not None:
            qp = view.query_positions.repeat(g)
            logits = logits.masked_fill(view.positions[:, None, :] > qp[None, :, None], float("-inf"))
        logits = logits.masked_fill(~view.valid_mask()[:, None, :], float("-inf"))
        scores = logits.softmax(dim=-1).nan_to_num(0.0).sum(dim=1)
        return Keep.from_topk(scores, view.budget, view.valid)
