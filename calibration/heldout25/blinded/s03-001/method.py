"""Fair-share salience (board B_online, query-agnostic prefill).

Summed attention favours old tokens: a token near the start of the window is seen by every query, one near its
end by a handful. Fair-share salience divides what a token receives by how many probing rows could see it at
all, so an early token and a late one are compared on the same footing. The probing rows are a cheap mixture:
the newest rows of the context, plus an evenly seeded sample of the older rows of the window.
"""

from __future__ import annotations

import numpy as np
import torch

from harness import EvictionMethod, Keep, LayerView


class FairShareSalience(EvictionMethod):
    name = "fair_share_salience"
    query_window = 512
    newest_rows = 32
    sample_share = 0.10
    anchor = 4
    _cells = 1 << 17          # probe rows x tokens handled per layer in one piece

    def _probe_rows(self, n: int, layer: int) -> np.ndarray:
        tail = np.arange(max(0, n - self.newest_rows), n)
        older = np.arange(0, max(0, n - self.newest_rows))
        rng = np.random.default_rng(1000 + layer)
        k = int(round(self.sample_share * older.size))
        pick = np.sort(rng.choice(older, size=k, replace=False)) if k > 0 else np.empty(0, dtype=np.int64)
        return np.concatenate([pick, tail]).astype(np.int64)

    def _streamed(self, view: LayerView) -> torch.Tensor:
        pos = view.positions.float()
        first = pos.min(dim=-1, keepdim=True).values
        return torch.where(pos < first + self.anchor, torch.full_like(pos, 1e9), pos)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rows = self._probe_rows(view.queries.shape[1], view.layer)
        if rows.size * view.n_tokens > self._cells:
            return Keep.from_topk(self._streamed(view), view.budget, view.valid)
        idx = torch.from_numpy(rows).to(view.queries.device)
        q = view.queries.index_select(1, idx)
        qpos = view.query_positions.index_select(0, idx)
        from harness.api import reference_attention
        window = view.model.sliding_window if view.layer in view.model.sliding_layers else None
        got = reference_attention(q, view.keys, view.positions, qpos, view.model.group_size, view.valid,
                                  scale=view.model.scale, window=window, reduce="sum")     # (H_q, T)
        # how many probing rows could see each token (causal): a count per key position
        seen = (qpos.view(1, 1, -1) >= view.positions.unsqueeze(-1)).sum(-1).clamp(min=1).float()
        share = view.group(got, "mean") / seen
        pos = view.positions
        share = share.masked_fill(pos < pos.min(dim=-1, keepdim=True).values + self.anchor, float("inf"))
        return Keep.from_topk(share, view.budget, view.valid)
