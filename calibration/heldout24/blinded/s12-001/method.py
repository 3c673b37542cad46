"""PyramidInfer port (Yang et al., 2024, "PyramidInfer: Pyramid KV Cache Compression for High-throughput LLM
Inference", ACL 2024 Findings, arXiv 2405.12532), training-free, for board B_online.

This is a port of a published method, not a new one. PyramidInfer keeps fewer tokens in deeper layers (a
pyramid) and chooses them by the consensus of the most recent queries' attention ("pivotal context"), with the
newer of those queries weighted more.

Deviations from the paper (also in DESCRIPTION.md):
- the pyramid is a geometric schedule over the attention layers fitted to the harness's mean budget (the paper
  fixes a retention ratio per layer and applies it progressively during prefill);
- the recent queries are the context's own last 32 (on board B the question is not known), weighted linearly
  from 1 (oldest) to 2 (newest), attention summed over each KV head's query heads;
- the selection is one-shot after prefill; there is no decode-time re-selection;
- the recent 32 positions are always kept (the paper keeps the recent sequence).
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class PyramidInferPort(EvictionMethod):
    name = "pyramidinfer_port"
    query_window = 32
    ratio = 0.55              # deepest layer's share relative to the first
    floor = 8

    def layer_budgets(self, mean_budget: int, n_tokens: int, model) -> list[int] | None:
        n = len(model.attention_layers)
        if n < 2 or mean_budget >= n_tokens:
            return None
        decay = torch.logspace(0, torch.log10(torch.tensor(self.ratio)).item(), n)
        share = decay / decay.sum() * mean_budget * n
        budgets = share.floor().clamp(self.floor, n_tokens).long()
        while int(budgets.sum()) > mean_budget * n:          # clipping can overshoot: take it back from the top
            budgets[int(budgets.argmax())] -= 1
        return budgets.tolist()

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.attention()                                     # (H_q, W, T)
        w = torch.linspace(1.0, 2.0, att.shape[1], device=att.device)
        pivotal = view.group((att * w[None, :, None]).sum(1), "sum")
        recent = view.positions >= view.query_positions.min()
        return Keep.from_topk(pivotal.masked_fill(recent, float("inf")), view.budget, view.valid)
