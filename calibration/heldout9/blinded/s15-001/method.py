"""Progressive thinning: PM-KVQ's progressive schedule carried over from bits to tokens (board C).

Credit: the schedule is PM-KVQ's (Liu et al., "PM-KVQ: Progressive Mixed-precision KV Cache Quantization for
Long-CoT LLMs", arXiv 2505.18610). PM-KVQ keeps a long chain of thought at high precision while memory allows and,
whenever the cache runs out of room, lowers the precision of what is already stored one step at a time (16 -> 8 ->
4 -> 2 bits) instead of quantising every new token to the final low bit-width at once, so the error does not pile
up early. This submission applies that schedule to a token cap, which is what the arena's board C limits.

How the port maps it, and where it departs:
- A precision step becomes a density step: a region that is "demoted" keeps one token of every two (the one that
  has received more decode attention so far, summed over every query since the previous eviction) and its
  survivors move one tier down. Tiers run 0 (untouched) to 3; tokens enter at tier 0.
- Like PM-KVQ, the highest-precision material is demoted first and the oldest of it first: candidates are ordered
  by (tier, position) and paired in that order until enough tokens are freed. Tokens already at tier 3 are dropped
  by attention when nothing else is left.
- Not carried over: PM-KVQ's block-wise bit allocation across transformer blocks (on board C the cap is per layer,
  so there is nothing to move between layers), its Equivalent Right Shift (no integers here) and its calibration
  with positional interpolation (nothing is quantised).
- Always kept: the first 4 tokens and the newest 16.
"""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class ProgressiveThinning(EvictionMethod):
    name = "progressive_thinning"
    query_window = 512
    n_sink = 4
    newest = 16
    last_tier = 3

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        pos = view.positions
        tier = view.recall("tier")
        heard = view.recall("heard")
        if view.queries is not None:
            qpos = view.query_positions.to(pos.device)
            new = qpos > view.state.get("last_q", -1)
            if bool(new.any()):
                att = reference_attention(view.queries[:, new], view.keys, pos, qpos[new], view.model.group_size,
                                          view.valid, scale=view.model.scale, reduce="sum")
                heard = heard + view.group(att, "sum")
                view.state["last_q"] = int(qpos.max())
        keep_sets = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            n = idx.numel()
            free = n - view.budget
            alive = torch.ones(n, dtype=torch.bool, device=idx.device)
            if free > 0:
                guard = torch.zeros(n, dtype=torch.bool, device=idx.device)
                guard[: min(self.n_sink, n)] = True
                guard[max(0, n - self.newest):] = True
                t_h, p_h, a_h = tier[h, idx], pos[h, idx].float(), heard[h, idx]
                cand = torch.nonzero(~guard & (t_h < self.last_tier)).flatten()
                order = cand[(t_h[cand] * 1e7 + p_h[cand]).argsort()]
                pairs = min(free, order.numel() // 2)
                if pairs:
                    first, second = order[0:2 * pairs:2], order[1:2 * pairs:2]
                    second_wins = a_h[second] > a_h[first]
                    lose = torch.where(second_wins, first, second)
                    win = torch.where(second_wins, second, first)
                    alive[lose] = False
                    tier[h, idx[win]] += 1
                    free -= pairs
                if free > 0:
                    rest = torch.nonzero(alive & ~guard).flatten()
                    drop = rest[heard[h, idx[rest]].argsort()[:free]]
                    alive[drop] = False
                    free -= drop.numel()
                if free > 0:
                    rest = torch.nonzero(alive).flatten()
                    alive[rest[:free]] = False
            keep_sets.append(idx[alive])
        view.remember("tier", tier)
        view.remember("heard", heard)
        return Keep(tuple(keep_sets))
