"""SimLayerKV (Zhang et al., 2024, arXiv 2410.13846), ported to one-shot eviction on board B_online.

SimLayerKV finds "lazy" layers, whose last tokens put almost all their attention on the initial tokens and
the most recent ones, and trims only those to initial + recent tokens, keeping the full cache in every other
layer. This is a port of that idea, not the authors' code, with two stand-ins forced by the harness:
- the lazy test uses the attention of the context's last 8 queries (the paper uses the last token(s) of the
  prompt; on board B the question is not in the prefill), threshold 0.85 of the mass on 4 initial tokens plus a
  recent window as long as the rest of the budget;
- the harness gives every layer the same budget, so a non-lazy layer cannot keep its full cache: there the
  stand-in keeps the 4 initial tokens, the probe window and the tokens the probe window attends to most
  (summed, averaged over each KV head's query heads). The paper has no such selection.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SimLayerKVPort(EvictionMethod):
    name = "simlayerkv_port"
    query_window = 8
    n_initial = 4
    lazy_threshold = 0.85

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                                   # (H_q, 8, T)
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        n_recent = max(1, view.budget - self.n_initial)
        # initial + recent mask per KV head
        frame = view.positions < self.n_initial
        rank_from_end = counts[:, None] - 1 - torch.arange(view.n_tokens, device=valid.device)[None, :]
        frame = frame | ((rank_from_end >= 0) & (rank_from_end < n_recent))
        frame = frame & valid
        g = view.model.group_size
        per_q_frame = frame.repeat_interleave(g, dim=0)           # (H_q, T)
        mass = (attn * per_q_frame[:, None, :]).sum(-1)           # (H_q, 8)
        lazy = float(mass.mean()) >= self.lazy_threshold
        if lazy:
            score = frame.float() + 1e-6 * view.positions.float()
            return Keep.from_topk(score, view.budget, view.valid)
        score = view.group(attn.sum(dim=1), "mean")
        pinned = (view.positions < self.n_initial) | (view.positions >= view.query_positions.min())
        score = score.masked_fill(pinned, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
