"""Tapered Consensus: fewer tokens in deeper layers, chosen by what the newest positions agree on.

Deeper layers keep fewer tokens than shallow ones. Within a layer, the tokens kept are those the newest
positions (the question) jointly attend to, with newer positions weighted more; the question span is kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class TaperedConsensus(EvictionMethod):
    name = "tapered_consensus"
    question_queries = True
    top, bottom = 1.3, 0.7

    def layer_budgets(self, mean_budget, n_tokens, model):
        layers = list(model.attention_layers)
        n = len(layers)
        if n < 2:
            return None
        ratios = [self.top + (self.bottom - self.top) * i / (n - 1) for i in range(n)]
        norm = n / sum(ratios)
        return [max(1, int(mean_budget * r * norm)) for r in ratios]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                              # (H_q, N, T)
        n = attn.shape[1]
        w = torch.linspace(0.5, 1.5, n, device=attn.device)
        agree = (attn * w[None, :, None]).sum(dim=1) / w.sum()
        scores = view.group(agree, "mean")
        if view.query_positions is not None:
            scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
