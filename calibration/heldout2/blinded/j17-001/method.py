import torch

from harness.api import EvictionMethod, Keep, LayerView


class ContentOnly(EvictionMethod):
    """Window attention recomputed with the rotary embedding undone on queries and keys: content similarity
    without the positional bias toward nearby tokens."""

    query_window = 32

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = view.rotate(view.queries.float(), -view.query_positions)                     # (H_q, W, D) pre-RoPE
        k = torch.stack([view.rotate(view.keys[h].float(), -view.positions[h]) for h in range(view.n_kv_heads)])
        k = k.repeat_interleave(view.model.group_size, dim=0)                            # (H_q, T, D)
        logits = q @ k.transpose(1, 2) * view.model.scale
        score = view.group(logits.softmax(dim=-1).sum(dim=1), "mean")
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
