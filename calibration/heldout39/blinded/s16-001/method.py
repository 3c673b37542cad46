"""Rescue List: a recent window whose older tokens survive only by being rescued.

Each time a layer fills, the first 4 tokens (StreamingLLM's sinks) and the newest half of the budget stay.
The rest of the budget goes to older tokens by their rescue count: every decoding query since the previous
eviction rescues the tokens it attends to above three times an even share (3 / visible tokens) in any of a KV
head's query heads, and rescues accumulate over the whole generation (carried by position). Ties go to the
newer token. Unlike H2O's attention sums, a count is not dominated by a few huge weights on the sinks, and the
threshold adapts to how many tokens the query could see.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RescueList(EvictionMethod):
    name = "rescue_list"
    query_window = 512
    sinks = 4
    window_share = 0.5
    factor = 3.0

    def _rescues(self, view: LayerView, q: torch.Tensor, qpos: torch.Tensor) -> torch.Tensor:
        hkv, t, d = view.keys.shape
        g = view.model.group_size
        valid = view.valid_mask()
        k = view.keys.float()
        out = torch.zeros(hkv, t, device=k.device)
        for s in range(0, q.shape[1], 64):
            qc = q[:, s:s + 64].float().reshape(hkv, g, -1, d)
            see = (view.positions[:, None, :] <= qpos[s:s + 64][None, :, None]) & valid[:, None, :]
            lg = torch.einsum("hgcd,htd->hgct", qc, k) * view.model.scale
            w = lg.masked_fill(~see[:, None], float("-inf")).softmax(-1).nan_to_num(0.0)
            bar = self.factor / see.sum(-1).clamp_min(1).float()               # (hkv, c)
            hit = (w > bar[:, None, :, None]).any(dim=1)                       # (hkv, c, T)
            out += hit.sum(dim=1).float()
        return out

    def select(self, view: LayerView) -> Keep:
        count = view.recall("rescues")
        if view.queries is not None and view.query_positions is not None:
            last = view.state.get("rescue_last", -1)
            fresh = view.query_positions > last
            if bool(fresh.any()):
                qpos = view.query_positions[fresh].to(view.positions.device)
                count = count + self._rescues(view, view.queries[:, fresh], qpos)
                view.state["rescue_last"] = int(qpos.max())
        view.remember("rescues", count)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = count + view.positions.float() / (view.positions.float().max() + 1.0)   # ties: newer wins
        score = score.masked_fill(view.positions < self.sinks, float("inf"))
        window = max(1, int(view.budget * self.window_share))
        counts = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, max(0, n - window):n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
