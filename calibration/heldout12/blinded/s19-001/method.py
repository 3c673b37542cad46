"""Centroid-probe block retention (board A).

Tokens are grouped into fixed blocks of eight. A block is summarised by its centroid key, and the prompt's final
row (the end of the question, the position that will produce the answer) probes every centroid with a plain
inner product, per query head; the products of a KV head's query heads are added. Each KV head keeps its best
blocks whole, and the opening block is always kept. Block-granular retention keeps contiguous spans (numbers,
names) together, and the probe costs one product per block instead of one per token.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class CentroidProbe(EvictionMethod):
    name = "centroid_probe"
    query_window = 1
    block = 8

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        b = self.block
        whole = n // b
        tail = n - whole * b
        keys = view.keys.float()
        h_kv, _, d = keys.shape
        cents = keys[:, : whole * b].reshape(h_kv, whole, b, d).mean(dim=2)  # (H_kv, W, D)
        if tail:  # the unfinished last block gets a centroid of its own
            cents = torch.cat([cents, keys[:, whole * b:].mean(dim=1, keepdim=True)], dim=1)
        probe = view.queries[:, -1].float()  # (H_q, D): the final row
        g = view.model.group_size
        dots = torch.einsum("hgd,hwd->hw", probe.view(h_kv, g, d), cents)  # summed over the group
        dots[:, 0] = float("inf")  # opening block
        order = dots.argsort(dim=-1, descending=True)
        rank = torch.empty_like(order)
        rank.scatter_(1, order, torch.arange(order.shape[1], device=order.device).expand_as(order))
        member = torch.arange(n, device=keys.device) // b
        token_rank = rank[:, member].float()  # (H_kv, T): blocks in rank order, a block's tokens together
        token_rank = token_rank + torch.arange(n, device=keys.device).float() / (n + 1)
        keep = (-token_rank).topk(view.budget, dim=-1)  # best blocks whole; the remainder from the next block
        return Keep(tuple(keep.indices[h].sort().values for h in range(h_kv)))
