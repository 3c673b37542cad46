"""Veto-accumulation eviction (board C, decode-time).

Attention tells us which tokens a query reads; it does not tell us which tokens later tokens have made obsolete. We
let one head per group act as a referee: whenever a newer query scores an older key above that query's typical
score, the excess counts as a vote that the key has been superseded ("the newer token now stands for it"). Votes
add up across the whole generation; when a layer is full, the keys with the most accumulated votes leave.

- Referee: the first query head of each KV head's group; its logits (model scale) over the keys it can see, minus
  that query's mean logit, rectified: only above-typical interest votes.
- Votes are never cast for the first token of the sequence and never by a query for its own key.
- Every query since the previous call votes exactly once (the newest 64 queries are asked for; a block is at most
  32 tokens on the embedded model); totals live in ``view.state`` and follow the tokens by position.
- Keep the cap minus the block: the tokens with the fewest votes. New tokens start with none, so the recent past
  stays by construction.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class VetoAccumulation(EvictionMethod):
    name = "veto_accumulation"
    query_window = 64

    def select(self, view: LayerView) -> Keep:
        votes = view.recall("votes")
        if view.queries is not None:
            last = view.state.get("voted_upto", -1)
            fresh = view.query_positions > last
            if bool(fresh.any()):
                g = view.model.group_size
                q = view.queries[::g][:, fresh].float()  # (H_kv, N, D): one referee per group
                qpos = view.query_positions[fresh]
                logits = torch.einsum("hnd,htd->hnt", q, view.keys.float()) * view.model.scale
                visible = view.positions[:, None, :] < qpos[None, :, None]  # strictly older keys only
                visible &= view.valid_mask()[:, None, :]
                visible &= view.positions[:, None, :] > 0
                typical = (logits * visible).sum(-1, keepdim=True) / visible.sum(-1, keepdim=True).clamp_min(1)
                excess = (logits - typical).clamp_min(0.0) * visible
                votes = votes + excess.sum(dim=1)
                view.state["voted_upto"] = int(qpos.max())
        view.remember("votes", votes)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        return Keep.from_topk(-votes, view.budget, view.valid)
