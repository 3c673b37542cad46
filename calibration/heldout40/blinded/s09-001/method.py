"""Sure Readers: question attention where each question query counts by how sure it is.

On board A the question is in the prefill, and its queries say what the answer needs (as in SnapKV and NACL,
which use the question or an observation window). Not every question query is informative: a query that spreads
its attention evenly (function words, punctuation) says little. Here each question query's vote is weighted by
its sureness, one minus its attention entropy over the log of the keys it can see; a token's score is the
sureness-weighted attention it receives, summed over a KV head's query heads, lightly smoothed (average pool of
3). Four sink tokens and the newest 16 positions are always kept. Builds on SnapKV, NACL and StreamingLLM.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SureReaders(EvictionMethod):
    name = "sure_readers"
    question_queries = True
    sinks = 4
    recent = 16

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                                            # (H_q, N, T)
        entropy = -(attn * attn.clamp_min(1e-12).log()).sum(dim=-1)       # (H_q, N)
        seen = (attn > 0).sum(dim=-1).clamp_min(2).float()
        sureness = (1 - entropy / seen.log()).clamp(0, 1)
        votes = (attn * sureness[..., None]).sum(dim=1)                    # (H_q, T)
        scores = view.group(votes, "sum")
        scores = F.avg_pool1d(scores[:, None], 3, stride=1, padding=1, count_include_pad=False)[:, 0]
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, : min(self.sinks, n)] = float("inf")
            scores[h, max(0, n - self.recent): n] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
