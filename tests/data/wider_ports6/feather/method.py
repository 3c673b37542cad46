"""Level relevance plus a grid: the question's rows score every token with the rotary phases taken off both sides
(so a token's place in the context does not tilt its score), and part of each head's room is a grid of evenly spaced
tokens over what is left, so no stretch of the context goes unseen."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class LevelRelevanceGrid(EvictionMethod):
    name = "level_relevance_grid"
    question_queries = True
    query_window = 4
    grid_share = 0.3
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        qpos = view.query_positions
        plain_q = view.rotate(view.queries.float(), -qpos)
        plain_k = torch.stack([view.rotate(view.keys[h].float(), -view.positions[h]) for h in range(view.n_kv_heads)])
        logits = plain_q @ plain_k.repeat_interleave(g, dim=0).transpose(1, 2) * view.model.scale
        seen = view.positions.repeat_interleave(g, dim=0)[:, None, :] <= qpos[None, :, None]
        probs = logits.masked_fill(~seen, float("-inf")).softmax(dim=-1)
        score = view.group(probs.mean(dim=1), "mean")
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            pos = view.positions[h, :n]
            taken = (pos < self.opening) | (pos >= int(qpos.min()))
            room = max(0, view.budget - int(taken.sum()))
            k_grid = int(room * self.grid_share)
            if k_grid > 0:
                rest = torch.nonzero(~taken).flatten()
                taken[rest[torch.linspace(0, rest.numel() - 1, k_grid).round().long()]] = True
            left = view.budget - int(taken.sum())
            if left > 0:
                s = score[h, :n].masked_fill(taken, float("-inf"))
                taken[s.topk(min(left, int((~taken).sum()))).indices] = True
            out.append(torch.nonzero(taken).flatten()[: view.budget])
        return Keep(tuple(out))
