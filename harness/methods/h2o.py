"""H2O (Zhang et al., 2023, arXiv 2306.14048): keep the heavy hitters, the tokens with the largest
cumulative attention received, plus the most recent tokens; half of the budget each (the paper's scripts
use equal heavy and recent ratios). At prefill the scores are the attention of every prompt query; while
decoding, every query since the previous call (board C asks once per block of steps, with the newest queries) adds
its attention over the keys it saw, sums carried across calls by position: the per-step sums exactly, though the
block is evicted at once where the paper evicts one token per step.
``normalise`` divides each token's total by the number of queries that could see it (kvpress's
ObservedAttentionPress, "related to H2O": the mean attention received rather than the sum)."""


from harness.api import EvictionMethod, Keep, LayerView


class H2O(EvictionMethod):
    name = "h2o"
    query_window = 1 << 20  # every prompt query at prefill (the boundary's maximum); recent decode queries on C
    recent_share = 0.5
    normalise = False

    def select(self, view: LayerView) -> Keep:
        acc = view.recall("h2o")
        seen_by = view.recall("h2o_n") if self.normalise else None
        if view.queries is not None:
            assert view.query_positions is not None  # handed over together with the queries
            seen = view.state.get("h2o_seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                # summed over the queries as it is computed: all prompt queries never make a T x T matrix
                attn = (view.attention(view.queries[:, fresh], reduce="sum") if not bool(fresh.all())
                        else view.attention(reduce="sum"))
                acc = acc + view.group(attn, "sum")
                if seen_by is not None:  # queries of this call at or after each token's position
                    qpos = view.query_positions[fresh]
                    seen_by = seen_by + (qpos[None, None, :] >= view.positions[:, :, None]).sum(dim=-1)
                view.state["h2o_seen"] = int(view.query_positions.max())
        view.remember("h2o", acc)
        if seen_by is not None:
            view.remember("h2o_n", seen_by)
        valid = view.valid_mask()
        recent = int(view.budget * self.recent_share)
        scores = acc / seen_by.clamp_min(1) if seen_by is not None else acc.clone()
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):  # the last `recent` real tokens of each head are always kept
            n = int(counts[h])
            scores[h, max(0, n - recent) : n] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
