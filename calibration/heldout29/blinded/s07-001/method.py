"""Waypoints: ask several places in the context what they look back at, not only its end.

Query-agnostic window scoring (SnapKV without the question) asks only the closing rows of the context which earlier
entries matter. Those rows are biased toward their own neighbourhood and toward whatever the context ends with. Here a
few short runs of rows spread evenly through the context (``stops`` runs of ``run`` rows, the last one at the very
end) each read the entries before them. A run's reading is rescaled by how many entries it could see (so that a run
near the start, which spreads its mass over few entries, is not favoured), and an entry keeps its best rescaled
reading over the runs. Max-pooled over 3 neighbours, plus the first four entries and the closing run kept.
Builds on SnapKV (window attention, pooling), H2O (asking many queries rather than one window) and StreamingLLM.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class Waypoints(EvictionMethod):
    name = "waypoints"
    query_window = 1 << 20      # every context row; only ``stops`` x ``run`` of them are used
    stops = 4
    run = 8
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        qpos = view.query_positions
        n = int(qpos.numel())
        best = torch.zeros(view.n_kv_heads, view.n_tokens)
        window = view.model.sliding_window if view.layer in view.model.sliding_layers else None
        for s in range(1, self.stops + 1):
            end = max(self.run, round(n * s / self.stops))
            rows = torch.arange(max(0, end - self.run), min(end, n))
            if rows.numel() == 0:
                continue
            read = reference_attention(view.queries[:, rows], view.keys, view.positions, qpos[rows],
                                       view.model.group_size, view.valid, scale=view.model.scale,
                                       window=window, reduce="mean")
            read = view.group(read, "mean")
            seen = (view.positions <= qpos[rows].max()) & view.valid_mask()
            read = read * seen.sum(dim=1, keepdim=True).float()          # uniform reading = 1 everywhere
            best = torch.maximum(best, read)
        best = F.max_pool1d(best[:, None], 3, stride=1, padding=1)[:, 0]
        closing = view.positions >= qpos[max(0, n - self.run)]
        best = best.masked_fill(closing | (view.positions < self.n_sink), float("inf"))
        return Keep.from_topk(best, view.budget, view.valid)
