"""Doorways: keep the entries that many re-read rows would walk through first.

The offline pass re-reads the whole context, so its rows are a fair sample of the queries the context will meet.
For every re-read row and query head, the 16 keys with the largest raw inner product with the row are its
doorways (what a nearest-neighbour lookup for that row would return first). A cache entry's score is the number of
(row, query head) pairs, over the KV head's group, that count it among their doorways. The first 4 entries and the
newest 64 are kept as a fixed frame; the rest of the budget goes to the most visited doorways, ties to the newer
entry.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class Doorways(EvictionMethod):
    name = "doorways"
    reconstruction_queries = True
    doors = 16
    n_sink = 4
    frame = 64
    rows_per_pass = 256

    def _visits(self, view: LayerView) -> torch.Tensor:
        h_kv, t, d = view.keys.shape
        g = view.model.group_size
        keys = view.keys.float()
        hidden = ~view.valid_mask()
        q = view.queries.float().reshape(h_kv, g, -1, d)
        k = min(self.doors, t)
        shift = (torch.arange(h_kv, device=keys.device) * t).view(h_kv, 1, 1, 1)
        visits = torch.zeros(h_kv * t, device=keys.device)
        for start in range(0, q.shape[2], self.rows_per_pass):
            block = q[:, :, start:start + self.rows_per_pass]
            ip = torch.einsum("hgnd,htd->hgnt", block, keys).masked_fill(hidden[:, None, None, :], float("-inf"))
            near = ip.topk(k, dim=-1).indices + shift
            visits += torch.bincount(near.reshape(-1), minlength=h_kv * t).float()
        return visits.view(h_kv, t)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._visits(view)
        score = score + view.positions.float() / (float(view.positions.max()) + 1.0) * 0.5
        score = score.masked_fill(view.positions < self.n_sink, float("inf"))
        lengths = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(lengths[h])
            score[h, max(0, n - self.frame):n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
