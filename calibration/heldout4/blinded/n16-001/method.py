import torch

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Attention trend for decode-time eviction: compare what the newest queries attend to with what the queries
    just before them attended to; tokens whose share is rising are kept ahead of tokens whose share is fading."""

    name = "attention_trend"
    query_window = 64

    def select(self, view: LayerView) -> Keep:
        b = view.budget
        if view.queries is None or b >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        a = view.group(view.attention(), "mean")                      # (H_kv, N, T), causal
        n = a.shape[1]
        half = max(1, n // 2)
        old = a[:, : n - half].mean(dim=1) if n > half else a[:, :1].mean(dim=1)
        new = a[:, n - half:].mean(dim=1)
        level = 0.5 * (old + new)
        trend = torch.tanh((new - old) / (new + old + 1e-6))           # -1 fading ... +1 rising
        s = level * (1.0 + trend)
        recent = max(1, b // 8)
        valid = view.valid_mask()
        cnt = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(cnt[h])
            s[h, max(0, c - recent):c] = float("inf")
        return Keep.from_topk(s, b, view.valid)
