"""Column-and-stripe retention (board B_online, query-agnostic prefill).

Long-context attention maps have a recognisable skeleton: a few columns (tokens every later row returns to) and a
few stripes parallel to the diagonal (fixed distances back from the reader). The context's own closing rows are
enough to sketch that skeleton per head. Half of a head's budget keeps its strongest columns; the other half keeps
the tokens lying on its strongest stripes, measured back from the end of the context, so the next reader finds the
distances it habitually uses still in place.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ColumnStripe(EvictionMethod):
    name = "column_stripe"
    query_window = 64
    column_share = 0.5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        sketch = view.group(view.attention(), "sum")          # (H_kv, N, T): the closing rows' maps
        qpos = view.query_positions
        ok = view.valid_mask()
        n_col = int(view.budget * self.column_share)
        rows = []
        for h in range(view.n_kv_heads):
            pos = view.positions[h]
            a = sketch[h]                                    # (N, T)
            column = a.sum(0)
            # stripe strength per distance back from the reader
            dist = (qpos[:, None] - pos[None, :]).clamp_min(0)
            reach = int(dist.max()) + 1
            stripe = torch.zeros(reach, device=a.device).index_add_(0, dist.flatten(), a.flatten())
            back = (qpos.max() + 1 - pos).clamp(0, reach - 1)
            along = stripe[back] + 1e-7 * pos.float()
            col_pick = column.masked_fill(~ok[h], float("-inf")).topk(min(n_col, int(ok[h].sum()))).indices
            s = along.masked_fill(~ok[h], float("-inf")).clone()
            s[col_pick] = float("inf")
            rows.append(s)
        return Keep.from_topk(torch.stack(rows), view.budget, view.valid)
