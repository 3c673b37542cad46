"""Double Sparsity (Yang et al., 2024, arXiv 2408.07092), ported to a one-shot eviction on board A.

Double Sparsity estimates q.k cheaply from a few "label" channels: the channels of each head where query and key
magnitudes are largest (outlier channels), chosen offline on calibration data in the paper. The approximate logits
from those channels alone pick the tokens that matter, and exact attention then runs on them.

This port keeps that rule and changes where it runs:
- the label channels are chosen online, per layer and KV head, from this prompt: the 16 channels with the largest
  mean |q| x mean |k| over the question's queries and the context's keys (no offline calibration exists here);
- the selection is made once at prefill and becomes the eviction (the paper re-selects every decoding step over a
  full cache it keeps);
- the approximate logits are softmaxed per question row and summed over the rows and the query heads of the group;
  the question span is kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class DoubleSparsityPort(EvictionMethod):
    name = "double_sparsity_port"
    question_queries = True
    query_window = 8
    label_channels = 16

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        h_kv, t, d = view.keys.shape
        r = min(self.label_channels, d)
        q = view.queries.float().view(h_kv, g, -1, d)                       # (H_kv, g, N, D)
        k = view.keys.float()                                              # (H_kv, T, D)
        mask = view.valid_mask()
        k_mag = (k.abs() * mask[..., None]).sum(dim=1) / mask.sum(dim=1, keepdim=True).clamp_min(1)
        q_mag = q.abs().mean(dim=(1, 2))
        channels = (q_mag * k_mag).topk(r, dim=-1).indices                   # (H_kv, r) label channels
        q_lab = torch.gather(q, 3, channels[:, None, None, :].expand(h_kv, g, q.shape[2], r))
        k_lab = torch.gather(k, 2, channels[:, None, :].expand(h_kv, t, r))
        approx = torch.einsum("hgnr,htr->hgnt", q_lab, k_lab) * view.model.scale
        hidden = view.positions[:, None, None, :] > view.query_positions[None, None, :, None]
        approx = approx.masked_fill(hidden | ~mask[:, None, None, :], float("-inf"))
        weight = approx.softmax(dim=-1).nan_to_num(0.0).sum(dim=2).mean(dim=1)   # (H_kv, T)
        weight = weight.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(weight, view.budget, view.valid)
