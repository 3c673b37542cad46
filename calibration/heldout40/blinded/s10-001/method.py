"""Fold-In: decode-time eviction that folds what it drops into the nearest survivor instead of losing it.

While the model reasons, every new query's attention is added to a per-token tally carried across calls. At a
cap, the newest half of the kept budget is the recent window and the other half goes to the largest tallies.
A dropped token is not simply lost: it is folded into the survivor whose key points the most the same way, if
that resemblance clears a bar, and the survivor's key and value become a weighted blend (the dropped token
weighing more the closer it is). The bar is not fixed: it follows a running average of how close dropped tokens
have been to their survivors in this layer, so it adapts to each layer's geometry.
"""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class FoldIn(EvictionMethod):
    name = "fold_in"
    query_window = 512
    recent_share = 0.5
    bar_momentum = 0.9

    def _tally(self, view: LayerView) -> torch.Tensor:
        tally = view.recall("fold_tally")
        if view.queries is not None and view.query_positions is not None:
            last = view.state.get("fold_last", -1)
            new = view.query_positions > last
            if bool(new.any()):
                q = view.queries if bool(new.all()) else view.queries[:, new]
                tally = tally + view.group(view.attention(q, reduce="sum"), "sum")
                view.state["fold_last"] = int(view.query_positions.max())
        return tally

    def select(self, view: LayerView) -> Rewrite:
        tally = self._tally(view)
        valid = view.valid_mask()
        recent = int(view.budget * self.recent_share)
        bar = view.state.get("fold_bar")
        closeness = []
        keys_out, values_out, pos_out, tally_out = [], [], [], []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            budget = min(view.budget, n)
            k = view.keys[h, :n].float()
            v = view.values[h, :n].float()
            pos = view.positions[h, :n]
            score = tally[h, :n].clone()
            score[max(0, n - recent):] = float("inf")
            keep = torch.zeros(n, dtype=torch.bool, device=k.device)
            if budget > 0:
                keep[score.topk(budget).indices] = True
            kept, dropped = torch.nonzero(keep).flatten(), torch.nonzero(~keep).flatten()
            new_k, new_v = k[kept].clone(), v[kept].clone()
            if dropped.numel() and kept.numel():
                sim = F.normalize(k[dropped], dim=-1) @ F.normalize(k[kept], dim=-1).T
                best, target = sim.max(dim=1)
                closeness.append(best.mean())
                threshold = float(bar) if bar is not None else float(best.mean())
                fold = best >= threshold
                if bool(fold.any()):
                    w = best[fold].exp()                                  # weight of each folded token
                    tgt = target[fold]
                    total = torch.full((kept.numel(),), math.e, device=k.device).index_add_(0, tgt, w)
                    acc_k = new_k * math.e
                    acc_v = new_v * math.e
                    acc_k.index_add_(0, tgt, k[dropped][fold] * w[:, None])
                    acc_v.index_add_(0, tgt, v[dropped][fold] * w[:, None])
                    new_k, new_v = acc_k / total[:, None], acc_v / total[:, None]
            keys_out.append(new_k.to(view.keys.dtype))
            values_out.append(new_v.to(view.values.dtype))
            pos_out.append(pos[kept])
            tally_out.append(tally[h, kept])
        if closeness:
            mean_close = float(torch.stack(closeness).mean())
            view.state["fold_bar"] = mean_close if bar is None else \
                self.bar_momentum * float(bar) + (1 - self.bar_momentum) * mean_close
        # carry the tallies of the survivors by position (the view after this call holds exactly them)
        width = max((p.numel() for p in pos_out), default=0)
        pos_pad = torch.zeros(view.n_kv_heads, width, dtype=view.positions.dtype, device=view.keys.device)
        val_pad = torch.zeros(view.n_kv_heads, width, device=view.keys.device)
        ok_pad = torch.zeros(view.n_kv_heads, width, dtype=torch.bool, device=view.keys.device)
        for h, (p, t) in enumerate(zip(pos_out, tally_out)):
            pos_pad[h, : p.numel()], val_pad[h, : t.numel()], ok_pad[h, : p.numel()] = p, t, True
        view.state["fold_tally"] = (pos_pad, val_pad, ok_pad)
        return Rewrite(tuple(keys_out), tuple(values_out), tuple(pos_out))
