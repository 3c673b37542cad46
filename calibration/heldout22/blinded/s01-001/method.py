"""Echo with shoulders (board B_offline, one-off reconstruction pass).

Builds on KVzip (Kim et al., 2025, arXiv 2505.23416): a pair's importance is the attention it receives while the
model re-reads its context. KVzip takes the maximum over the re-reading rows, which rewards a pair that one row
needed badly but ignores pairs that many rows needed a little. Here the score blends both views, the max and the
mean over the rows (each normalised by its head's largest value), and then gives each pair a "shoulder": half of
the better of its two neighbours' scores (a 3-wide max-pool, as SnapKV's pooling, arXiv 2404.14469, but only half
strength), so a kept pair tends to keep the token that completes it. The first four pairs are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class EchoShoulders(EvictionMethod):
    name = "echo_shoulders"
    reconstruction_queries = True
    mean_weight = 0.5
    shoulder = 0.5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        peak = view.group(view.attention(view.queries, reduce="max"), "max")
        mean = view.group(view.attention(view.queries, reduce="mean"), "max")
        peak = peak / peak.amax(1, keepdim=True).clamp_min(1e-12)
        mean = mean / mean.amax(1, keepdim=True).clamp_min(1e-12)
        s = (1 - self.mean_weight) * peak + self.mean_weight * mean
        side = F.max_pool1d(s[:, None], 3, stride=1, padding=1)[:, 0]
        s = torch.maximum(s, self.shoulder * side)
        s[:, :4] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
