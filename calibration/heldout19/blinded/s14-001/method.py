"""Scissorhands port (Liu et al., 2023, "Scissorhands: Exploiting the Persistence of Importance Hypothesis for LLM KV
Cache Compression at Test Time", arXiv 2305.17118), board C.

This is a port. Scissorhands counts, over a history window of recent queries, how often each token received less
than the average attention (1 / number of visible tokens); tokens with the highest "unimportance" counts are evicted,
and the most recent tokens are protected.

Deviations: counts are carried across eviction calls by position (the harness asks once per block, not per step);
every query since the previous call is counted (the block, up to 512 queries) rather than a fixed window; new tokens
start with a count of zero and are protected for the newest 32; ties are broken by recency.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ScissorhandsPort(EvictionMethod):
    name = "scissorhands_port"
    query_window = 512
    protected = 32

    def select(self, view: LayerView) -> Keep:
        count = view.recall("low_count")
        if view.queries is not None:
            done = view.state.get("sh_q", -1)
            fresh = view.query_positions > done
            if bool(fresh.any()):
                att = view.attention()[:, fresh]  # (H_q, n, T)
                qpos = view.query_positions[fresh].to(view.positions.device)
                visible = (view.positions.unsqueeze(1) <= qpos.view(1, -1, 1)) & view.valid_mask().unsqueeze(1)
                avg = 1.0 / visible.sum(dim=-1).clamp_min(1).float()  # (H_kv, n)
                low = (att < avg.repeat_interleave(view.model.group_size, 0).unsqueeze(-1))
                low = low & visible.repeat_interleave(view.model.group_size, 0)
                count = count + view.group(low.float().sum(dim=1), "mean")
                view.state["sh_q"] = int(view.query_positions.max())
        view.remember("low_count", count)
        newest = view.positions.amax(dim=-1, keepdim=True)
        score = -count + 1e-6 * view.positions.float()
        score = score.masked_fill(view.positions > newest - self.protected, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
