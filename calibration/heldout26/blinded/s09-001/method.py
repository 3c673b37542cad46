"""Column-stripe census (board A, query-aware prefill).

The closing rows of the prompt (the question and what precedes it) are read once, and what they attend to is
tallied two ways per KV head: by column (a token every row keeps returning to, wherever the row sits) and by
stripe (a fixed distance between the reading row and the token it reads, whatever the token). The cache then
keeps the strongest columns, and for the strongest stripes the token lying at that distance behind the newest
position, which is where the next rows will look if the stripe pattern carries on. A few opening columns and
the shortest stripes are always counted in.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView

_FORCED = float("inf")


class ColumnStripeCensus(EvictionMethod):
    name = "column_stripe_census"
    query_window = 64
    column_part = 0.5          # budget share spent on columns; the rest on stripes
    opening_columns = 4
    short_stripes = 8

    def _census(self, view: LayerView) -> tuple[torch.Tensor, torch.Tensor]:
        attn = view.attention()                                            # (H_q, N, T), causal
        cells = view.group(attn, "sum")                                    # (H_kv, N, T)
        columns = cells.sum(dim=1)                                         # (H_kv, T)
        gap = (view.query_positions.view(1, -1, 1) - view.positions.unsqueeze(1)).clamp(min=0)   # (H_kv, N, T)
        width = int(gap.max()) + 1
        stripes = torch.zeros(cells.shape[0], width, device=cells.device)
        stripes.scatter_add_(1, gap.reshape(cells.shape[0], -1), cells.reshape(cells.shape[0], -1))
        return columns, stripes

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        columns, stripes = self._census(view)
        first = view.positions.masked_fill(~view.valid_mask(), 1 << 40).amin(dim=1, keepdim=True)
        columns = columns.masked_fill(view.positions < first + self.opening_columns, _FORCED)
        stripes[:, : self.short_stripes] = _FORCED
        newest = int(view.query_positions.max())
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            live = torch.nonzero(valid[h]).flatten()
            want = min(view.budget, live.numel())
            n_cols = min(want, max(1, int(round(want * self.column_part))))
            col_rank = live[columns[h, live].argsort(descending=True)]
            taken = torch.zeros(view.n_tokens, dtype=torch.bool, device=columns.device)
            taken[col_rank[:n_cols]] = True
            # stripe d -> the token at position newest - d (if this head still holds it)
            slot = torch.full((newest + 1,), -1, dtype=torch.long, device=columns.device)
            pos_live = view.positions[h, live]
            in_range = pos_live <= newest
            slot[pos_live[in_range]] = live[in_range]
            for d in stripes[h].argsort(descending=True).tolist():
                if int(taken.sum()) >= want:
                    break
                if d > newest:
                    continue
                i = int(slot[newest - d])
                if i >= 0:
                    taken[i] = True
            for i in col_rank.tolist():                 # any budget left: further columns
                if int(taken.sum()) >= want:
                    break
                taken[i] = True
            out.append(torch.nonzero(taken).flatten())
        return Keep(tuple(out))
