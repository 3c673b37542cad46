"""Absorbing eviction (board C): while reasoning, a capped layer drops its least-used entries, but a dropped entry
whose key closely matches a surviving one is absorbed into it instead of being lost. How close is close enough
is learned on the fly, per layer, from the similarities seen in earlier rounds."""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class AbsorbingEviction(EvictionMethod):
    name = "absorbing_eviction"
    query_window = 64          # at least the block: every query since the previous round
    recent_share = 0.5         # half of what survives is the newest stretch
    gate_momentum = 0.7        # how slowly the absorption gate follows new rounds

    # --- usage ledger -------------------------------------------------------------------------------------
    def _ledger(self, view: LayerView) -> torch.Tensor:
        usage = view.recall("usage")
        if view.queries is not None:
            last = view.state.get("last_query", -1)
            fresh = view.query_positions > last
            if bool(fresh.any()):
                got = view.attention(view.queries[:, fresh], reduce="sum")     # (H_q, T)
                usage = usage + view.group(got, "sum")
                view.state["last_query"] = int(view.query_positions.max())
        view.remember("usage", usage)
        return usage

    # --- absorption ---------------------------------------------------------------------------------------
    def _gate(self, view: LayerView, observed: float) -> float:
        prev = view.state.get("gate")
        gate = observed if prev is None else self.gate_momentum * prev + (1 - self.gate_momentum) * observed
        view.state["gate"] = gate
        return gate

    def select(self, view: LayerView) -> Rewrite:
        usage = self._ledger(view)
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        out_k, out_v, out_p = [], [], []
        sims_seen = []
        plans = []
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            idx = torch.nonzero(valid[h]).flatten()
            keep_n = min(view.budget, n)
            rank = usage[h, idx].clone()
            recent = int(keep_n * self.recent_share)
            if recent > 0:
                rank[n - recent:] = float("inf")
            kept = rank.topk(keep_n).indices.sort().values
            gone = torch.ones(n, dtype=torch.bool, device=rank.device)
            gone[kept] = False
            dropped = torch.nonzero(gone).flatten()
            plans.append((idx, kept, dropped))
            if dropped.numel():
                kk = F.normalize(view.keys[h, idx[kept]].float(), dim=-1)
                kd = F.normalize(view.keys[h, idx[dropped]].float(), dim=-1)
                best, where = (kd @ kk.t()).max(dim=1)
                sims_seen.append(best)
                plans[-1] = (idx, kept, dropped, best, where)
        gate = self._gate(view, float(torch.cat(sims_seen).mean())) if sims_seen else view.state.get("gate", 1.0)
        for h, plan in enumerate(plans):
            idx, kept = plan[0], plan[1]
            keys = view.keys[h, idx[kept]].float().clone()
            vals = view.values[h, idx[kept]].float().clone()
            if len(plan) == 5:
                _, _, dropped, best, where = plan
                take = best >= gate
                if bool(take.any()):
                    src = dropped[take]
                    tgt = where[take]
                    w = torch.exp(best[take])                                       # similarity weights
                    denom = torch.full((kept.numel(),), math.e, device=keys.device)  # the survivor's own weight
                    denom.index_add_(0, tgt, w)
                    acc_k = keys * (math.e / denom)[:, None]
                    acc_v = vals * (math.e / denom)[:, None]
                    acc_k.index_add_(0, tgt, view.keys[h, idx[src]].float() * (w / denom[tgt])[:, None])
                    acc_v.index_add_(0, tgt, view.values[h, idx[src]].float() * (w / denom[tgt])[:, None])
                    keys, vals = acc_k, acc_v
            out_k.append(keys.to(view.keys.dtype))
            out_v.append(vals.to(view.values.dtype))
            out_p.append(view.positions[h, idx[kept]].clone())
        return Rewrite(tuple(out_k), tuple(out_v), tuple(out_p))
