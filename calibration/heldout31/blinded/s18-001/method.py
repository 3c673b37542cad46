"""Show of Hands: each head votes, and a vote is reused while the question stays the same.

For the newest row, every query head ranks the cache by its own softmax over the keys and raises a hand, weighted
by that softmax, for each of its top `budget` tokens; a token's score is the sum of the hands of its group's heads.
Consecutive rows of a trace often ask the same thing: if the newest row points the same way as the row of the last
vote (cosine of the group-pooled rows >= 0.9), the last tally is reused and only new tokens are added (kept);
otherwise a new vote is held. The newest 16 tokens are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class ShowOfHands(EvictionMethod):
    name = "show_of_hands"
    query_window = 1
    same_way = 0.9
    recent = 16

    def _vote(self, view: LayerView) -> torch.Tensor:
        probs = view.attention(view.queries[:, -1:], reduce="sum")        # (H_q, T), all cached keys visible
        probs = probs.masked_fill(~view.valid_mask().repeat_interleave(view.model.group_size, 0), 0.0)
        k = min(view.budget, probs.shape[-1])
        top = probs.topk(k, dim=-1)
        hands = torch.zeros_like(probs).scatter_(-1, top.indices, top.values)
        return view.group(hands, "sum")

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        row = view.queries[:, -1].float().reshape(view.n_kv_heads, g, -1).mean(dim=1)   # (H_kv, D)
        last_row = view.state.get("row")
        if last_row is not None and last_row.shape == row.shape and \
                bool((F.cosine_similarity(row, last_row, dim=-1) >= self.same_way).all()):
            tally = view.recall("tally", fill=-1.0)
            tally = tally.masked_fill(tally < 0, float(tally.max()))      # new tokens: level with the best
        else:
            tally = self._vote(view)
            view.state["row"] = row.clone()
        view.remember("tally", tally)
        counts = view.valid_mask().sum(dim=1)
        scores = tally.clone()
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - self.recent):n] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
