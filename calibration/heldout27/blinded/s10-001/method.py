"""Last-call register (board C): every cached token carries the step at which it was last really read; the
tokens whose last call is oldest leave first.

In a reasoning trace a step is leaned on for a while and then never looked at again. A token's register entry is
the position of the newest query that paid it more than ``lift`` x the even share of attention (1 / the number
of tokens that query could see), in any query head of its KV head; a token starts with its own position when it
enters the cache. At eviction the oldest entries go; ties go to the token read harder by the newest rows. The
first ``n_sink`` tokens stay. The register is carried between calls by position.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class LastCallRegister(EvictionMethod):
    name = "last_call_register"
    query_window = 64
    lift = 1.0
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        own = view.positions.float()
        register = torch.maximum(view.recall("register", fill=-1.0), own.masked_fill(view.recall("seen") > 0, -1.0))
        tiebreak = torch.zeros_like(own)
        seen_until = view.state.get("seen_until", -1)
        if view.queries is not None and view.query_positions is not None:
            qpos = view.query_positions.to(view.keys.device)
            fresh = qpos > seen_until
            if bool(fresh.any()):
                attn = view.attention()[:, fresh]  # (H_q, n, T), causal
                g = view.model.group_size
                kpos = view.positions.repeat_interleave(g, 0)
                kvalid = valid.repeat_interleave(g, 0)
                visible = ((kpos[:, None, :] <= qpos[fresh][None, :, None]) & kvalid[:, None, :]).sum(dim=-1)
                even = 1.0 / visible.clamp_min(1).float()  # (H_q, n)
                strong = attn > self.lift * even[..., None]
                stamp = torch.where(strong, qpos[fresh].float()[None, :, None], torch.full_like(attn, -1.0))
                stamp = view.group(stamp.amax(dim=1), "max")  # (H_kv, T)
                register = torch.maximum(register, stamp)
                tiebreak = view.group(attn[:, -1], "mean")
                view.state["seen_until"] = int(qpos.max())
        view.remember("register", register)
        view.remember("seen", torch.ones_like(register))
        score = register + tiebreak.clamp(0, 1) * 0.5  # positions are whole numbers: the tiebreak stays inside a step
        score = score.masked_fill(view.positions < self.n_sink, float("inf")).masked_fill(~valid, float("-inf"))
        return Keep.from_topk(score, view.budget, view.valid)
