"""Depth-market budgets (board A).

Tokens are scored per layer by what the closing prompt queries read (a short 8-query window, causal softmax, summed,
smoothed by a 5-wide average). The layers then compete in one market: all layers' smoothed scores, over every query
head, are pooled and the best ``base x heads x layers`` entries are taken; the share of winners each layer holds is the
share of the context budget it gets (beyond the window every layer keeps). The market is cleared once a full pass over
the layers has been seen, and the clearing price is used for the next compression (the harness asks for per-layer
budgets before it hands over the layers).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class DepthMarketBudgets(EvictionMethod):
    name = "depth_market_budgets"
    query_window = 8
    smooth = 5
    floor_share = 0.1          # a layer never gets less than this fraction of the even share

    def __init__(self) -> None:
        self._book: dict[int, torch.Tensor] = {}     # layer -> smoothed per-query-head scores of this pass
        self._shares: list[float] | None = None
        self._layers: tuple[int, ...] = ()
        self._base: int | None = None

    def setup(self, model: ModelInfo) -> None:
        self._layers = model.attention_layers

    # ---- the market -------------------------------------------------------------------------------------------
    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        layers = model.attention_layers
        win = min(self.query_window, mean_budget)
        base = mean_budget - win
        self._base = base
        if self._shares is None or len(self._shares) != len(layers):
            return None
        pool = base * len(layers)
        raw = [max(self.floor_share * base, s * pool) for s in self._shares]
        scale = pool / max(sum(raw), 1e-9)
        out = [min(n_tokens, win + int(r * scale)) for r in raw]
        while sum(out) > mean_budget * len(layers):
            i = max(range(len(out)), key=lambda j: out[j])
            out[i] -= 1
        return out

    def _clear(self, base: int) -> None:
        ids = sorted(self._book)
        stacked = [self._book[i].flatten() for i in ids]
        owner = torch.cat([torch.full((s.numel(),), j, dtype=torch.long) for j, s in enumerate(stacked)])
        flat = torch.cat(stacked)
        heads = self._book[ids[0]].shape[0]
        k = min(flat.numel(), max(1, base) * heads * len(ids))
        winners = owner[flat.topk(k).indices]
        counts = torch.bincount(winners, minlength=len(ids)).float()
        self._shares = (counts / counts.sum()).tolist()
        self._book.clear()

    # ---- per layer ----------------------------------------------------------------------------------------------
    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.layer in self._book:        # a new pass started before the last one finished
            self._book.clear()
        attn = view.attention()                                     # (H_q, w, T)
        start = int(view.query_positions.min())
        lead = (view.positions[0] < start).sum().item()
        per_q = attn.sum(dim=1)[:, :lead]                           # prefix only, per query head
        sm = F.avg_pool1d(per_q[:, None], self.smooth, stride=1, padding=self.smooth // 2)[:, 0]
        self._book[view.layer] = sm.detach().cpu()
        layers = self._layers or view.model.attention_layers
        if len(self._book) == len(layers):
            self._clear(self._base if self._base is not None else max(1, view.budget - self.query_window))
        score = torch.full(view.keys.shape[:2], float("inf"), device=view.keys.device)
        score[:, :lead] = view.group(sm, "mean")
        return Keep.from_topk(score, view.budget, view.valid)
