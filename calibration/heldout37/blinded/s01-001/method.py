"""Last Call: a decode-time cache that remembers, for every token, when it was last looked at hard, and lets
the tokens whose last hard look is oldest go first."""

import torch

from harness import EvictionMethod, Keep, LayerView


class LastCall(EvictionMethod):
    name = "last_call"
    query_window = 64        # every query since the previous round (the block is at most 32 on the embedded model)
    anchors = 4              # the opening tokens never leave
    hard = 2.0               # a look is hard when it gives a key at least `hard` x its fair share (1 / keys seen)

    def _hard_looks(self, view: LayerView) -> torch.Tensor:
        """(H_kv, T): position of the newest fresh query that looked hard at each token (-1 when none did)."""
        qpos = view.query_positions
        upto = view.state.get("last_call_upto", -1)
        fresh = qpos > upto
        out = torch.full(view.keys.shape[:2], -1.0)
        if not bool(fresh.any()):
            return out
        probs = view.attention()[:, fresh]                                # (H_q, F, T), causal
        fpos = qpos[fresh].float()
        seen = (view.positions[None, :, :] <= fpos[:, None, None].to(view.positions.device))  # (F, H_kv, T)
        share = seen.sum(-1).clamp_min(1).float()                          # (F, H_kv)
        g = view.model.group_size
        fair = share.transpose(0, 1).repeat_interleave(g, dim=0)[:, :, None]   # (H_q, F, 1)
        hit = probs * fair >= self.hard                                   # (H_q, F, T)
        stamp = torch.where(hit, fpos[None, :, None], torch.full_like(probs, -1.0)).amax(dim=1)  # (H_q, T)
        view.state["last_call_upto"] = int(qpos.max())
        return view.group(stamp, "max")

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        last = view.recall("last_call", fill=-1.0)
        arrival = view.positions.float()
        last = torch.where(last < 0, arrival, last)          # arriving counts as being looked at
        if view.queries is not None and view.query_positions is not None:
            last = torch.maximum(last, self._hard_looks(view))
        view.remember("last_call", last)
        rank = last.clone()
        rank[:, : self.anchors] = float("inf")
        rank = rank + arrival * 1e-6                          # ties: the later arrival stays
        return Keep.from_topk(rank, view.budget, view.valid)
