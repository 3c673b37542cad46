"""Reservoir slot (board C, decode-time cap).

Each KV head keeps its most-read tokens (attention received from every query since the start, carried across
calls by position), the newest few tokens, and one extra slot: a reservoir. Whatever a call evicts is not lost
but poured into the reservoir: its key and value become the importance-weighted average of the reservoir's
previous content and of every token evicted now, and the reservoir's own importance becomes the sum of what it
absorbed. No parameters to tune beyond the recent span.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, LayerView, Rewrite


class _Reservoir:
    """Per-layer bookkeeping of the reservoir slot: its position per head."""

    def __init__(self, state: dict, heads: int) -> None:
        self.state = state
        if "reservoir_pos" not in state or len(state["reservoir_pos"]) != heads:
            state["reservoir_pos"] = [-1] * heads

    def position(self, h: int) -> int:
        return int(self.state["reservoir_pos"][h])

    def place(self, h: int, pos: int) -> None:
        self.state["reservoir_pos"][h] = int(pos)


class ReservoirSlot(EvictionMethod):
    name = "reservoir_slot"
    query_window = 512
    recent = 8

    def _importance(self, view: LayerView) -> torch.Tensor:
        acc = view.recall("rs_mass")
        if view.queries is None:
            return acc
        seen = view.state.get("rs_seen", -1)
        qpos = view.query_positions
        fresh = qpos > seen
        if bool(fresh.any()):
            q = view.queries[:, fresh]
            a = view.attention(q) if not bool(fresh.all()) else view.attention()
            if not bool(fresh.all()):  # explicit queries are not masked causally: do it here
                vis = view.positions[:, None, :] <= qpos[fresh].to(view.positions.device)[None, :, None]
                a = a * vis.repeat_interleave(view.model.group_size, 0)
            acc = acc + view.group(a.sum(1), "sum")
            view.state["rs_seen"] = int(qpos.max())
        return acc

    def select(self, view: LayerView):
        ok = view.valid_mask()
        mass = self._importance(view)
        res = _Reservoir(view.state, view.n_kv_heads)
        keys, values, positions, masses = [], [], [], []
        for h in range(view.n_kv_heads):
            real = torch.nonzero(ok[h]).flatten()
            pos = view.positions[h, real]
            m = mass[h, real].clamp_min(0)
            cap = min(view.budget, real.numel())
            is_res = pos == res.position(h)
            if real.numel() <= view.budget:
                keys.append(view.keys[h, real].float()); values.append(view.values[h, real].float())
                positions.append(pos); masses.append(m)
                continue
            order = pos.argsort()
            rank = m.clone()
            rank[order[-self.recent:]] = float("inf")          # the newest tokens stay
            rank[is_res] = float("-inf")                        # the reservoir is rebuilt, never ranked
            keep = rank.topk(cap - 1).indices
            drop = torch.ones(real.numel(), dtype=torch.bool, device=pos.device)
            drop[keep] = False                                  # includes the old reservoir
            w = m[drop] + 1e-6
            k_new = (w[:, None] * view.keys[h, real[drop]].float()).sum(0) / w.sum()
            v_new = (w[:, None] * view.values[h, real[drop]].float()).sum(0) / w.sum()
            if is_res.any():
                p_new = int(pos[is_res][0])
            else:
                p_new = int(pos[drop][m[drop].argmax()])
            res.place(h, p_new)
            k_all = torch.cat([view.keys[h, real[keep]].float(), k_new[None]])
            v_all = torch.cat([view.values[h, real[keep]].float(), v_new[None]])
            p_all = torch.cat([pos[keep], torch.tensor([p_new], device=pos.device, dtype=pos.dtype)])
            m_all = torch.cat([m[keep], w.sum()[None]])
            o = p_all.argsort()
            keys.append(k_all[o]); values.append(v_all[o]); positions.append(p_all[o]); masses.append(m_all[o])
        self._carry(view, positions, masses)
        return Rewrite(tuple(keys), tuple(values), tuple(positions))

    def _carry(self, view: LayerView, positions, masses) -> None:
        """Store the importance of what stays, by position, for the next call."""
        width = max(p.numel() for p in positions)
        pos = torch.full((view.n_kv_heads, width), -1, dtype=view.positions.dtype, device=view.positions.device)
        val = torch.zeros(view.n_kv_heads, width, device=view.positions.device)
        okm = torch.zeros(view.n_kv_heads, width, dtype=torch.bool, device=view.positions.device)
        for h, (p, m) in enumerate(zip(positions, masses)):
            pos[h, :p.numel()] = p
            val[h, :p.numel()] = m
            okm[h, :p.numel()] = True
        view.state["rs_mass"] = (pos, val, okm)
