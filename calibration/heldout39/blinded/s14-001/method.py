"""Half-Max Spans: keep attention peaks together with as much of their surroundings as is still half as
important as the peak.

Scores are the question's summed attention (mean over a KV head's query heads), as in SnapKV. Instead of
keeping scattered top tokens (SnapKV) or fixed-size chunks (ChunkKV), the budget is spent peak by peak: take
the highest-scoring token not yet kept, then grow a span around it to the left and right for as long as the
neighbours score at least half the peak (at most 8 tokens each way, never past the budget). The first 4 tokens
are kept. Span widths therefore follow the attention profile: a sharp peak costs one token, a plateau a run.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class HalfMaxSpans(EvictionMethod):
    name = "half_max_spans"
    question_queries = True
    reach = 8
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = view.group(view.attention(reduce="sum"), "mean")
        counts = view.valid_mask().sum(dim=1)
        picks = []
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            s = score[h, :n].tolist()
            kept = [False] * n
            left = min(view.budget, n)
            for i in range(min(self.sinks, left)):
                kept[i] = True
            left -= min(self.sinks, left)
            order = sorted(range(n), key=lambda i: -s[i])
            for peak in order:
                if left <= 0:
                    break
                if kept[peak]:
                    continue
                kept[peak] = True
                left -= 1
                bar = 0.5 * s[peak]
                for step in (-1, 1):                               # grow each side until it drops
                    j = peak + step
                    while left > 0 and 0 <= j < n and abs(j - peak) <= self.reach and not kept[j] and s[j] >= bar:
                        kept[j] = True
                        left -= 1
                        j += step
            picks.append(torch.tensor([i for i in range(n) if kept[i]], dtype=torch.long, device=view.keys.device))
        return Keep(tuple(picks))
