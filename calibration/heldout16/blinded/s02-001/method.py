"""Support-projected window reading (board B_online, query-agnostic prefill).

Softmax gives every key some attention, so a window that reads a handful of tokens sharply still spreads a long,
flat tail over the whole context, and a summed window score rewards tokens for being numerous rather than for being
read. We project each closing row's logits onto a sparse distribution instead: the 1.5-power threshold projection,
p_i = [(alpha - 1) z_i - tau]_+ ** (1 / (alpha - 1)) with alpha = 1.5 and tau found by bisection (30 steps) so
that the row sums to one. Tokens outside a row's support get exactly zero from it.

Per KV head, the projected rows of the closing 32 context positions (causal) are summed and averaged over the
query heads of the group; a token no row supports is ordered by its mean logit, below every supported token. The
closing rows' own tokens are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _threshold_projection(z: torch.Tensor, alpha: float = 1.5, steps: int = 30) -> torch.Tensor:
    """Rows of ``z`` (..., T; -inf = excluded) projected onto the simplex with the alpha-power threshold."""
    a1 = alpha - 1.0
    x = z * a1
    finite = torch.isfinite(x)
    x = torch.where(finite, x, torch.full_like(x, -1e9))
    top = x.amax(dim=-1, keepdim=True)
    lo, hi = top - 1.0, top  # p(tau = top - 1) sums to >= 1; p(tau = top) sums to 0
    for _ in range(steps):
        mid = (lo + hi) / 2
        mass = (x - mid).clamp_min(0).pow(1.0 / a1).sum(dim=-1, keepdim=True)
        lo = torch.where(mass >= 1, mid, lo)
        hi = torch.where(mass >= 1, hi, mid)
    p = (x - lo).clamp_min(0).pow(1.0 / a1)
    p = p / p.sum(dim=-1, keepdim=True).clamp_min(1e-12)
    return p.masked_fill(~finite, 0.0)


class SupportProjectedWindow(EvictionMethod):
    name = "support_projected_window"
    query_window = 32
    alpha = 1.5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        valid = view.valid_mask()
        qpos = view.query_positions
        support = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        tiebreak = torch.zeros_like(support)
        for h in range(view.n_kv_heads):
            z = torch.einsum("gnd,td->gnt", view.queries[h * g:(h + 1) * g].float(), view.keys[h].float())
            z = z * view.model.scale
            hide = (view.positions[h][None, None, :] > qpos[None, :, None]) | ~valid[h][None, None, :]
            z = z.masked_fill(hide, float("-inf"))
            support[h] = _threshold_projection(z, self.alpha).sum(dim=1).mean(dim=0)
            tiebreak[h] = torch.where(hide, torch.zeros_like(z), z).mean(dim=(0, 1))
        # supported tokens first (by projected mass); the rest by mean logit, squashed below any support
        unsupported = torch.sigmoid(tiebreak) * 1e-9
        scores = torch.where(support > 0, support + 1e-6, unsupported)
        scores = scores.masked_fill(view.positions >= qpos.min(), float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
