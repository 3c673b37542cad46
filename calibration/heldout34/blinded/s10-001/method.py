"""Head Poll: each query head casts a normalised ballot over the cache; ballots are pooled per KV head.

The newest queries vote; a round whose newest query looks like the previous round's reuses what it knew.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class HeadPoll(EvictionMethod):
    name = "head_poll"
    query_window = 8
    lead = 4                 # oldest positions always kept
    tail = 32                # newest positions always kept
    reuse_above = 0.9        # cosine of the newest query to the previous round's

    def _ballots(self, view: LayerView) -> torch.Tensor:
        g = view.model.group_size
        keys = view.keys.float().repeat_interleave(g, dim=0)                  # (H_q, T, D)
        q = view.queries.float()                                              # (H_q, N, D)
        logits = torch.bmm(q, keys.transpose(1, 2)) * view.model.scale        # (H_q, N, T)
        late = view.positions.repeat_interleave(g, dim=0)[:, None, :] > view.query_positions[None, :, None]
        logits = logits.masked_fill(late, float("-inf"))
        if view.valid is not None:
            logits = logits.masked_fill(~view.valid.repeat_interleave(g, dim=0)[:, None, :], float("-inf"))
        votes = F.softmax(logits, dim=-1).nan_to_num(0.0).sum(dim=1)          # (H_q, T)
        return votes.reshape(view.n_kv_heads, g, -1).sum(dim=1)

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        newest = F.normalize(view.queries[:, -1].float(), dim=-1)
        prev = view.state.get("poll_q")
        tally = self._ballots(view)
        if prev is not None and float((newest * prev).sum(-1).mean()) > self.reuse_above:
            old = view.recall("poll", fill=float("nan"))
            tally = torch.where(torch.isnan(old), tally, old)
        view.state["poll_q"] = newest
        view.remember("poll", tally)
        tally = tally.masked_fill(~valid, float("-inf"))
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            tally[h, : min(self.lead, c)] = float("inf")
            tally[h, max(0, c - self.tail): c] = float("inf")
        return Keep.from_topk(tally, view.budget, view.valid)
