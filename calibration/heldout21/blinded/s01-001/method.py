"""Self-tuned forgetting (board C, decode-time cap).

Builds on H2O (Zhang et al., 2023, arXiv 2306.14048), which ranks cached tokens by the attention they have accumulated,
and A2SF (Jo et al., 2024, arXiv 2407.20485), which adds a forgetting factor so old tokens are not favoured just for
having been seen longer. A2SF fixes the factor by hand; here each layer learns its own online.

Each layer carries three exponentially forgetting attention sums (decays 0.3, 0.6, 0.9). At an eviction round the
rows since the previous round give the fresh attention (mean over the rows, summed over the group's query heads).
Before folding it in, each sum is checked as a predictor of it: the decay whose previous sum puts the most fresh
attention mass into its own top `budget` is adopted for this round. All three sums are then updated, and tokens are
ranked by the adopted one. The newest 32 tokens always stay.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SelfTunedForgetting(EvictionMethod):
    name = "self_tuned_forgetting"
    query_window = 64
    decays = (0.3, 0.6, 0.9)
    newest = 32

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        seen = view.state.get("seen", -1)
        fresh = view.query_positions > seen
        if bool(fresh.any()):
            rows = view.queries[:, fresh]
            att = view.group(view.attention(rows, reduce="mean"), "sum")
        else:
            att = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        view.state["seen"] = int(view.query_positions.max())
        mask = view.valid_mask().float()
        sums = [view.recall(f"ema{i}") for i in range(len(self.decays))]
        k = min(view.budget, view.n_tokens)
        hits = []
        for s in sums:
            top = s.masked_fill(mask == 0, float("-inf")).topk(k, dim=-1).indices
            hits.append(float(torch.gather(att, 1, top).sum()))
        pick = max(range(len(self.decays)), key=lambda i: (hits[i], -i)) if view.state.get("rounds", 0) else 1
        view.state["rounds"] = view.state.get("rounds", 0) + 1
        view.state["decay"] = self.decays[pick]
        new = [d * s + att for d, s in zip(self.decays, sums)]
        for i, s in enumerate(new):
            view.remember(f"ema{i}", s)
        score = new[pick].clone()
        counts = view.valid_mask().sum(1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - self.newest):c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
