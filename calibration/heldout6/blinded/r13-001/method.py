"""Decayed usage with nearest-key insurance (board C).

Builds on H2O (Zhang et al., 2023, arXiv 2306.14048: accumulated attention, recent tokens kept), A2SF (Jo et al.,
2024, arXiv 2407.20485: the accumulation decays so that old tokens are not favoured for having been seen longer)
and StreamingLLM (Xiao et al., 2023, arXiv 2309.17453: the first 4 tokens kept).

Each round (a layer at its cap) adds the attention of every query since the previous round to a per-token usage
that decays by `decay` per round. The addition is an insurance term: for each of the newest `insured` queries and
each query head, the cached key with the largest dot product (the token that query would attend to most) is kept
whatever its usage, because a token a current query points at is likely to be read again in the next few steps,
even when it was never read before. 4 sinks and the newest eighth of the budget are kept too; the rest by usage.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class InsuredUsage(EvictionMethod):
    name = "insured_usage"
    query_window = 64
    decay = 0.8
    insured = 8
    n_sink = 4
    recent_frac = 0.125

    def select(self, view: LayerView) -> Keep:
        usage = view.recall("usage") * self.decay
        valid = view.valid_mask()
        protect = torch.zeros(view.keys.shape[:2], dtype=torch.bool, device=view.keys.device)
        if view.queries is not None:
            last = view.state.get("seen", -1)
            fresh = view.query_positions > last
            if bool(fresh.any()):
                usage = usage + view.group(view.attention(view.queries[:, fresh], reduce="sum"), "sum")
                view.state["seen"] = int(view.query_positions.max())
            g = view.model.group_size
            newest = view.queries[:, -self.insured:].float()                          # (H_q, n, D)
            npos = view.query_positions[-self.insured:]
            for h in range(view.n_kv_heads):
                dots = newest[h * g:(h + 1) * g] @ view.keys[h].float().t()            # (g, n, T)
                unseen = (view.positions[h][None, :] > npos[:, None]) | ~valid[h][None, :]
                dots = dots.masked_fill(unseen[None], float("-inf"))
                protect[h, dots.argmax(dim=-1).flatten()] = True
        view.remember("usage", usage)
        score = usage.clone()
        counts = valid.sum(dim=1)
        recent = max(1, int(view.budget * self.recent_frac))
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, : min(self.n_sink, c)] = float("inf")
            score[h, max(0, c - recent): c] = float("inf")
        # insured tokens rank just below the always-kept ones
        score = torch.where(protect & valid & torch.isfinite(score), score + 1e6, score)
        return Keep.from_topk(score, view.budget, view.valid)
