import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """LazyLLM (Fu et al., 2024) ported as eviction: last-token attention, head-averaged, deeper layers keep less."""

    name = "lazyllm_port"
    query_window = 1

    def layer_budgets(self, mean_budget: int, n_tokens: int, model) -> list[int]:
        n = len(model.attention_layers)
        weights = torch.linspace(1.5, 0.5, n)
        return [min(n_tokens, int(mean_budget * w)) for w in weights]

    def select(self, view: LayerView) -> Keep:
        attn = view.attention()[:, -1]                              # (Hq, T)
        shared = attn.mean(dim=0, keepdim=True).expand(view.keys.shape[0], -1)
        return Keep.from_topk(shared, view.budget, view.valid)
