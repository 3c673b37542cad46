"""Carried relevance with a digest entry (board A, question-aware prefill; rewrites entries with ``Rewrite``).

A single layer's view of what the question needs is noisy; the layers of one prefill see the same tokens, so we let
relevance travel down the stack. For each layer, the question's relevance of a token is the attention it receives
from the question span and the closing row (causal), averaged over the rows and over every query head of the layer.
The carried relevance is updated layer by layer as carried = 0.5 x carried + 0.5 x this layer's relevance (the first
attention layer of a pass starts it). Each head keeps the budget minus one of the most relevant tokens, the same set
for all heads, exactly as they are. The tokens left over are not dropped outright: they are folded into one digest
entry per head, the relevance-weighted mean of their keys and of their values, placed at the position of the most
relevant leftover token.

Contrast: SnapKV (Li et al., 2024) ranks each layer on its own and drops the rest.
"""

import torch

from harness import EvictionMethod, LayerView, ModelInfo, Rewrite


class CarriedRelevanceDigest(EvictionMethod):
    name = "carried_relevance_digest"
    question_queries = True
    query_window = 1
    carry = 0.5

    def __init__(self) -> None:
        self.first_layer = 0
        self.carried: torch.Tensor | None = None
        self.carried_pos: torch.Tensor | None = None

    def setup(self, model: ModelInfo) -> None:
        self.first_layer = model.attention_layers[0] if model.attention_layers else 0

    def _relevance(self, view: LayerView) -> torch.Tensor:
        """(T,) over the padded axis: mean over rows and all query heads; padding gets 0."""
        if view.queries is None:
            return view.positions.float().mean(dim=0) / max(1, view.n_tokens)
        attn = view.attention(reduce="mean")  # (H_q, T)
        return attn.mean(dim=0)

    def select(self, view: LayerView) -> Rewrite:
        rel = self._relevance(view)
        pos = view.positions[0]
        same = (self.carried is not None and self.carried_pos is not None and view.layer != self.first_layer
                and self.carried_pos.shape == pos.shape and bool((self.carried_pos == pos).all()))
        carried = self.carry * self.carried + (1 - self.carry) * rel if same else rel
        self.carried, self.carried_pos = carried, pos.clone()
        valid = view.valid_mask()
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            n = idx.numel()
            b = min(view.budget, n)
            score = carried[idx] if view.valid is None else rel[idx]
            k, v, p = view.keys[h, idx], view.values[h, idx], view.positions[h, idx]
            if b >= n:
                ks.append(k), vs.append(v), ps.append(p)
                continue
            order = score.argsort(descending=True)
            top, rest = order[: max(0, b - 1)], order[max(0, b - 1):]
            wt = score[rest].clamp_min(0).double()
            wt = wt / wt.sum() if float(wt.sum()) > 0 else torch.full_like(wt, 1.0 / wt.numel())
            dk = (wt[:, None] * k[rest].double()).sum(dim=0, keepdim=True).to(k.dtype)
            dv = (wt[:, None] * v[rest].double()).sum(dim=0, keepdim=True).to(v.dtype)
            dp = p[rest[0]].reshape(1)
            nk, nv, np_ = torch.cat([k[top], dk]), torch.cat([v[top], dv]), torch.cat([p[top], dp])
            o = np_.argsort()
            ks.append(nk[o]), vs.append(nv[o]), ps.append(np_[o])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
