"""Return Interval: a token that keeps coming back is kept until it is overdue.

Every query since the previous round marks the tokens it looks at clearly above uniform; from those marks the
method learns, per token, the longest gap seen between two marks and the step of the latest one. A token still
inside its own gap is expected back and is protected ahead of the rest; overdue and never-marked tokens compete
on their fresh attention.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ReturnInterval(EvictionMethod):
    name = "return_interval"
    query_window = 512
    lift = 2.0               # a mark: attention above lift x 1/(visible keys)
    lead = 4
    tail = 32

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        seen = view.state.get("ri_seen", -1)
        fresh = view.query_positions > seen
        if not bool(fresh.any()):
            fresh[-1] = True
        view.state["ri_seen"] = int(view.query_positions.max())
        qpos = view.query_positions[fresh].float()
        attn = view.group(view.attention(view.queries[:, fresh]), "max")          # (H_kv, N, T)
        visible = (view.positions[:, None, :] <= qpos[None, :, None]) & valid[:, None, :]
        uniform = 1.0 / visible.sum(dim=-1, keepdim=True).clamp_min(1)
        marked = (attn > self.lift * uniform) & visible                            # (H_kv, N, T)
        stamp = torch.where(marked, qpos[None, :, None], torch.full_like(attn, -1.0)).transpose(1, 2)
        last_before = view.recall("ri_last", fill=-1.0)                           # (H_kv, T)
        running = torch.cummax(torch.cat([last_before[..., None], stamp], dim=-1), dim=-1).values
        prev = running[..., :-1]
        gaps = torch.where((stamp >= 0) & (prev >= 0), stamp - prev, torch.zeros_like(stamp))
        widest = torch.maximum(view.recall("ri_gap"), gaps.amax(dim=-1))
        last = running[..., -1]
        view.remember("ri_last", last)
        view.remember("ri_gap", widest)
        now = float(qpos.max())
        due = (last >= 0) & (now - last <= widest)
        share = attn.sum(dim=1)
        share = share / share.sum(dim=-1, keepdim=True).clamp_min(1e-9)
        score = share + due.float()
        score = score.masked_fill(~valid, float("-inf"))
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            score[h, : min(self.lead, c)] = float("inf")
            score[h, max(0, c - self.tail): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
