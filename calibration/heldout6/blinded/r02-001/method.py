"""Multi-scale window probes (board B_online).

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469): the attention that the context's closing queries pay to
each earlier token predicts what later questions will read. SnapKV uses one observation window; the right length
is unknown when the question is not (a short window sees only the last sentence, a long one blurs it). Here three
nested windows (the last 8, 32 and 128 context queries) each give a per-head attention profile, each profile is
divided by its own per-head maximum, and a token scores the largest of the three normalised profiles (it is kept
if any scale finds it important), average-pooled over 3 tokens. The last 32 tokens and the first 4
(StreamingLLM, Xiao et al., 2023, arXiv 2309.17453) are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class MultiScaleProbes(EvictionMethod):
    name = "multiscale_probes"
    query_window = 128
    scales = (8, 32, 128)
    keep_tail = 32
    n_sink = 4
    kernel = 3

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                                        # (H_q, N, T), causal
        n = attn.shape[1]
        best = None
        for w in self.scales:
            prof = view.group(attn[:, max(0, n - w):].sum(dim=1), "mean")   # (H_kv, T)
            prof = prof / prof.amax(dim=-1, keepdim=True).clamp_min(1e-12)
            best = prof if best is None else torch.maximum(best, prof)
        best = F.avg_pool1d(best[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                            count_include_pad=False)[:, 0]
        tail_from = int(view.query_positions.max()) - self.keep_tail + 1
        best = best.masked_fill((view.positions >= tail_from) | (view.positions < self.n_sink), float("inf"))
        return Keep.from_topk(best, view.budget, view.valid)
