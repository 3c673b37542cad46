"""Removal Shift: keep the context tokens whose removal would move the question's read-out the most.

For every question query, the read-out is the attention-weighted mix of values. Dropping one token and
renormalising shifts that read-out by a closed-form amount; a token's score is that shift, averaged over the
question and over the query heads that share its KV head. The question span itself is always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _displacement(w: torch.Tensor, vals: torch.Tensor) -> torch.Tensor:
    """w (G, N, T) weights of one KV head's query heads, vals (T, D): per-token read-out shift (G, N, T)."""
    mix = torch.einsum("gnt,td->gnd", w, vals)
    sq = (mix * mix).sum(-1, keepdim=True) - 2.0 * torch.einsum("gnd,td->gnt", mix, vals) \
        + (vals * vals).sum(-1)[None, None, :]
    gain = w / (1.0 - w).clamp_min(1e-4)
    return gain * sq.clamp_min(0.0).sqrt()


class RemovalShift(EvictionMethod):
    name = "removal_shift"
    question_queries = True

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        w = view.attention()
        g = view.model.group_size
        rows = []
        for h in range(view.n_kv_heads):
            shift = _displacement(w[h * g:(h + 1) * g], view.values[h].float())
            rows.append(shift.mean(dim=(0, 1)))
        scores = torch.stack(rows)
        if view.query_positions is not None:
            scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
