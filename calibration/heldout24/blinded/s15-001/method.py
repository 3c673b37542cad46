"""Two-ledger cache (board C, decode-time).

What the prompt said and what the model has written so far age differently: the prompt is read once and
consulted all along, the trace is consulted mostly near where it is being written. The cache is kept as two
ledgers with separate allowances. The prompt ledger is ranked by the attention the decode steps have paid it
over the whole trace and shrinks only to its allowance; the trace ledger keeps its newest stretch and, beyond
that, the trace tokens the decode steps have leaned on most.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class TwoLedgerCache(EvictionMethod):
    name = "two_ledger_cache"
    query_window = 64
    prompt_share = 0.45       # allowance of the prompt ledger
    trace_newest = 24

    def _ledger_scores(self, view: LayerView) -> torch.Tensor:
        seen = view.recall("paid")
        if view.queries is not None:
            last = view.state.get("last_q", -1)
            fresh = view.query_positions > last
            if bool(fresh.any()):
                q = view.queries[:, fresh]
                qpos = view.query_positions[fresh]
                from harness.api import reference_attention
                paid = reference_attention(q, view.keys, view.positions, qpos, view.model.group_size, view.valid,
                                           scale=view.model.scale, reduce="sum")
                seen = seen + view.group(paid, "sum")
                view.state["last_q"] = int(qpos.max())
        view.remember("paid", seen)
        return seen

    def select(self, view: LayerView) -> Keep:
        ok = view.valid_mask()
        if "split" not in view.state:
            view.state["split"] = int(view.positions.max()) + 1
        split = view.state["split"]
        score = self._ledger_scores(view)
        out = []
        for h in range(view.n_kv_heads):
            idx = ok[h].nonzero().flatten()
            b = min(view.budget, idx.numel())
            pos = view.positions[h, idx]
            s = score[h, idx]
            is_prompt = pos < split
            n_prompt, n_trace = int(is_prompt.sum()), int((~is_prompt).sum())
            room_p = min(n_prompt, max(b - n_trace, int(self.prompt_share * b)))
            room_t = b - room_p
            p_idx = idx[is_prompt]
            p_keep = p_idx[s[is_prompt].topk(room_p).indices] if room_p else p_idx[:0]
            t_idx, t_s = idx[~is_prompt], s[~is_prompt]
            newest = min(self.trace_newest, room_t, t_idx.numel())
            t_rank = t_s.clone()
            if newest:
                t_rank[-newest:] = float("inf")
            t_keep = t_idx[t_rank.topk(min(room_t, t_idx.numel())).indices] if room_t else t_idx[:0]
            out.append(torch.cat([p_keep, t_keep]).sort().values)
        return Keep(tuple(out))
