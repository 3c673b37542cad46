import torch

from harness.api import EvictionMethod, Keep, LayerView


class GatedHeavy(EvictionMethod):
    """Heavy hitters (H2O's accumulation) whose recent share is set per head by the entropy of its attention."""

    query_window = 1 << 20
    n_sinks = 4

    def select(self, view: LayerView) -> Keep:
        acc = view.recall("acc")
        if view.queries is not None:
            acc = acc + view.group(view.attention(reduce="sum"), "sum")
        view.remember("acc", acc)
        p = acc / acc.sum(dim=-1, keepdim=True).clamp_min(1e-9)
        ent = -(p * torch.log(p.clamp_min(1e-9))).sum(dim=-1)            # (H,)
        spread = ent / torch.log(torch.tensor(float(view.n_tokens)))
        score = acc.clone()
        n = view.n_tokens
        for h in range(view.n_kv_heads):
            recent = int(view.budget * (0.2 + 0.5 * float(spread[h])))
            score[h, max(0, n - recent):] = float("inf")
        score[:, : self.n_sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
