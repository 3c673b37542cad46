"""Head-calibrated budget sharing (board B_online): attention scores of different heads are made comparable by
scaling each head with a bound on how much it can move the layer output, and the layer's budget then goes to the
best (head, token) pairs of the whole layer."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _output_bound(values: torch.Tensor, body: torch.Tensor) -> torch.Tensor:
    """(H_kv,) the largest L1 norm of a value vector outside the closing window: a per-head bound on what one
    token can add to the head's output."""
    l1 = values.float().abs().sum(dim=-1).masked_fill(~body, 0.0)
    return l1.amax(dim=-1)


def _capacities(flat_rank_owner: torch.Tensor, n_heads: int, per_head: int, floor_share: float) -> torch.Tensor:
    """Per-head capacities: a floor share of the even split, the rest in proportion to how many of the layer's top
    pairs each head owns."""
    owned = torch.bincount(flat_rank_owner, minlength=n_heads).float()
    cap = torch.floor(owned * (1.0 - floor_share) + floor_share * per_head).long()
    short = per_head * n_heads - int(cap.sum())
    if short > 0:                                     # rounding left a few slots: give them to the largest owners
        cap[owned.argsort(descending=True)[:short]] += 1
    return cap


class HeadCalibratedSharing(EvictionMethod):
    name = "head_calibrated_sharing"
    query_window = 40
    kernel = 5
    floor_share = 0.25

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h_kv, t = view.n_kv_heads, view.n_tokens
        g = view.model.group_size
        valid = view.valid_mask()
        window = (view.positions >= int(view.query_positions.min())) & valid
        body = valid & ~window
        mean_attn = view.attention(reduce="mean")                            # (H_q, T)
        pooled = F.max_pool1d(mean_attn[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        bound = _output_bound(view.values, body).repeat_interleave(g)        # (H_q,)
        calibrated = (pooled * bound[:, None]).reshape(h_kv, g, t).amax(dim=1)
        calibrated = calibrated.masked_fill(~body, float("-inf"))

        n_win = window.sum(dim=1)
        per_head = max(0, view.budget - int(n_win.max()))
        room = int(body.sum(dim=1).min())
        per_head = min(per_head, room)
        if per_head == 0:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        ordered, order = calibrated.sort(dim=-1, descending=True)
        winners = ordered.flatten().topk(per_head * h_kv).indices // t
        cap = _capacities(winners, h_kv, per_head, self.floor_share)
        cap = torch.minimum(cap, body.sum(dim=1))
        out = []
        for h in range(h_kv):
            chosen = order[h, : int(cap[h])]
            out.append(torch.cat([chosen, torch.nonzero(window[h]).flatten()]).sort().values)
        return Keep(tuple(out))
