"""Port of SCOPE (Wu et al., 2024, "SCOPE: Optimizing Key-Value Cache Compression in Long-context Generation",
arXiv 2412.13649) to the harness's decode-time board.

SCOPE treats the prefill cache and the decoding cache separately: the prompt's KV is preserved (or compressed
once at prefill), and only the growing decode cache is compressed while generating, with a recent window plus
heavy hitters chosen by attention accumulated over the decoding steps (its "adaptive" decoding strategy).
Deviations, stated: the harness does not mark where the prompt ends, so the port freezes the oldest
`frozen` tokens of the sequence (min(256, cap/4); MATH prompts fit in it) as the preserved prefill part; the rest
is the decode part, where a recent window of `recent_share` of what is left is kept and the remainder goes to the
decode tokens with the largest attention accumulated over every decode query since the layer's first eviction
(sums carried across calls). Evictions happen per block, as the harness asks, not per step.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ScopePort(EvictionMethod):
    name = "scope_port"
    query_window = 512
    recent_share = 0.5

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        acc = view.recall("scope_acc")
        seen = view.state.get("scope_seen", -1)
        fresh = view.query_positions > seen
        if bool(fresh.any()):
            q = view.queries if bool(fresh.all()) else view.queries[:, fresh]
            acc = acc + view.group(view.attention(q, reduce="sum"), "sum")
            view.state["scope_seen"] = int(view.query_positions.max())
        view.remember("scope_acc", acc)
        frozen = min(256, view.budget // 4)
        score = acc.masked_fill(~valid, float("-inf"))
        window = int((view.budget - frozen) * self.recent_share)
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            score[h, : min(frozen, c)] = float("inf")
            score[h, max(0, c - window): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
