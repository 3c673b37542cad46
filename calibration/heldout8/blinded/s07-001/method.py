"""Coded-replay retention (board B_offline).

The offline pass (the model re-reading its context) tells which cached keys are *recalled*; we ask it through a
compact code of each key rather than the exact key, so that the ranking reflects what survives a tight bit budget:

1. per KV head, decorrelate the keys with their principal axes (centred, eigen-decomposition of the covariance);
2. hand out an integer number of bits to each axis by dynamic programming, minimising the total expected squared
   error ``sum_i var_i * 4**(-bits_i)`` under an average of ``bits_per_axis`` bits;
3. quantise each axis uniformly over its range with its bits (0 bits: the axis is dropped), decode, rotate back;
4. score each token by the largest attention any replay query pays its decoded key (softmax over the context).

The first four tokens are always kept.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


def allot_bits(var: torch.Tensor, total: int, most: int) -> list[int]:
    """Integer bits per axis minimising sum var_i * 4**-b_i with sum b_i <= total (exact DP over the budget)."""
    inf = float("inf")
    cost = torch.full((total + 1,), inf, dtype=torch.float64)
    cost[0] = 0.0
    choice = []
    for v in var.double().tolist():
        new = torch.full_like(cost, inf)
        pick = torch.zeros(total + 1, dtype=torch.long)
        for b in range(most + 1):
            shifted = torch.full_like(cost, inf)
            shifted[b:] = cost[: total + 1 - b]
            cand = shifted + v * 4.0 ** (-b)
            better = cand < new
            new = torch.where(better, cand, new)
            pick = torch.where(better, torch.full_like(pick, b), pick)
        cost = new
        choice.append(pick)
    at = int(torch.argmin(cost))
    bits = []
    for pick in reversed(choice):
        b = int(pick[at])
        bits.append(b)
        at -= b
    return bits[::-1]


def code_keys(k: torch.Tensor, bits_per_axis: float, most: int = 8) -> torch.Tensor:
    """k (T, D) -> its decoded transform code (T, D)."""
    mu = k.mean(0, keepdim=True)
    x = k - mu
    cov = x.T @ x / max(1, x.shape[0] - 1)
    var, axes = torch.linalg.eigh(cov)
    coef = x @ axes
    bits = allot_bits(var.clamp_min(0), int(round(bits_per_axis * k.shape[1])), most)
    out = torch.zeros_like(coef)
    for i, b in enumerate(bits):
        if b == 0:
            continue
        c = coef[:, i]
        lo, hi = c.min(), c.max()
        step = (hi - lo).clamp_min(1e-8) / (2 ** b - 1)
        out[:, i] = torch.round((c - lo) / step) * step + lo
    return out @ axes.T + mu


class CodedReplayRetention(EvictionMethod):
    name = "coded_replay_retention"
    reconstruction_queries = True
    bits_per_axis = 2.0
    opening = 4
    rows = 256

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        h_kv, t, d = view.keys.shape
        g = view.model.group_size
        coded = torch.zeros(h_kv, t, d, device=view.keys.device)
        for h in range(h_kv):
            n = int(valid[h].sum())
            coded[h, :n] = code_keys(view.keys[h, :n].float(), self.bits_per_axis)
        q = view.queries.float()
        best = torch.zeros(h_kv, t, device=coded.device)
        for s in range(0, q.shape[1], self.rows):
            qc = q[:, s:s + self.rows]
            lg = torch.einsum("hgcd,htd->hgct", qc.reshape(h_kv, g, -1, d), coded) * view.model.scale
            lg = lg.masked_fill(~valid[:, None, None, :], float("-inf"))
            best = torch.maximum(best, lg.softmax(-1).amax(dim=(1, 2)))
        best = best.masked_fill(view.positions < self.opening, float("inf"))
        return Keep.from_topk(best, view.budget, view.valid)
