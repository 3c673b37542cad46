"""Kin Fold: decode-time eviction that folds each dropped entry into its closest surviving relative.

Each cached entry carries a running tally of the attention the decoded queries paid it. When a layer is full the
newest quarter of the budget is kept as is and the rest goes to the largest tallies. A dropped entry is not simply
lost: when its key is close enough in direction to a survivor's key, it is folded into that survivor (keys and
values averaged with similarity weights). "Close enough" is a bar that moves with the layer: a slow running mean of
how close dropped entries have been to their nearest survivor in earlier rounds.
"""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite
from harness.api import reference_attention


def _tally(view: LayerView) -> torch.Tensor:
    """Running attention tally per entry: old totals realigned by position plus the queries not yet counted."""
    total = view.recall("kin_tally")
    if view.queries is None or view.query_positions is None:
        return total
    last = view.state.get("kin_last", -1)
    new_rows = torch.nonzero(view.query_positions > last).flatten()
    if new_rows.numel():
        window = view.model.sliding_window if view.layer in view.model.sliding_layers else None
        got = reference_attention(view.queries[:, new_rows], view.keys, view.positions,
                                  view.query_positions[new_rows], view.model.group_size, view.valid,
                                  scale=view.model.scale, window=window, reduce="sum")
        total = total + view.group(got, "sum")
        view.state["kin_last"] = int(view.query_positions.max())
    return total


class KinFold(EvictionMethod):
    name = "kin_fold"
    query_window = 64
    recent_part = 0.25
    bar_momentum = 0.8     # running mean of the folding bar
    bar_start = 0.5

    def select(self, view: LayerView) -> Rewrite:
        tally = _tally(view)
        view.remember("kin_tally", tally)
        valid = view.valid_mask()
        bar = float(view.state.get("kin_bar", self.bar_start))
        seen = []
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            live = torch.nonzero(valid[h]).flatten()
            key, val, pos = view.keys[h, live].float(), view.values[h, live].float(), view.positions[h, live]
            score = tally[h, live].clone()
            n = live.numel()
            room = min(view.budget, n)
            recent = min(room, int(math.ceil(room * self.recent_part)))
            if recent:
                score[n - recent:] = float("inf")
            keep = score.topk(room).indices.sort().values
            gone = torch.ones(n, dtype=torch.bool)
            gone[keep] = False
            gone_idx = torch.nonzero(gone).flatten()
            k_out, v_out = key[keep].clone(), val[keep].clone()
            if gone_idx.numel() and keep.numel():
                unit = F.normalize(key, dim=-1)
                sim = unit[gone_idx] @ unit[keep].T                   # (dropped, kept)
                best, host = sim.max(dim=1)
                seen.append(float(best.mean()))
                fold = best > bar
                if bool(fold.any()):
                    w_in = best[fold].exp()                            # weight of each folded entry
                    w_self = torch.full((keep.numel(),), math.e)       # a survivor weighs exp(1): its own similarity
                    mass = w_self.clone().index_put_((host[fold],), w_in, accumulate=True)
                    k_sum = (k_out * w_self[:, None]).index_put_((host[fold],), key[gone_idx[fold]] * w_in[:, None],
                                                                 accumulate=True)
                    v_sum = (v_out * w_self[:, None]).index_put_((host[fold],), val[gone_idx[fold]] * w_in[:, None],
                                                                 accumulate=True)
                    k_out, v_out = k_sum / mass[:, None], v_sum / mass[:, None]
            ks.append(k_out)
            vs.append(v_out)
            ps.append(pos[keep].long())
        if seen:
            view.state["kin_bar"] = self.bar_momentum * bar + (1 - self.bar_momentum) * sum(seen) / len(seen)
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
