"""Column-and-diagonal retention (board A): the closing queries' attention is read along two axes at once. A
column that collects attention from many closing queries is a globally useful token; a diagonal (a fixed
distance back from the query) that collects attention is a useful relative offset. The cache keeps the best
columns, then fills the rest of the budget with the tokens that sit on the best diagonals as seen from the end of
the prompt."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _diagonal_mass(attn: torch.Tensor, qpos: torch.Tensor, kpos: torch.Tensor, span: int) -> torch.Tensor:
    """attn (G, N, T) of one KV group -> (span,) total attention per query-key distance qpos - kpos."""
    dist = (qpos[:, None] - kpos[None, :]).clamp(min=0)                  # (N, T)
    bins = torch.zeros(span, device=attn.device)
    flat = attn.sum(dim=0)                                              # (N, T)
    ok = (qpos[:, None] >= kpos[None, :]) & (dist < span)
    bins.index_add_(0, dist[ok], flat[ok])
    return bins


class ColumnDiagonalRetention(EvictionMethod):
    name = "column_diagonal_retention"
    query_window = 64
    question_queries = True
    column_share = 0.5      # of the budget spent on columns, the rest on diagonals
    lead_columns = 30       # the first columns are always taken (capped by a fraction of the budget)
    lead_diagonals = 64     # the closest diagonals are always taken

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                                             # (H_q, N, T), causal
        g = view.model.group_size
        valid = view.valid_mask()
        qpos = view.query_positions
        end = int(qpos.max())
        picks = []
        for h in range(view.n_kv_heads):
            block = attn[h * g:(h + 1) * g]
            kpos = view.positions[h]
            real = valid[h]
            n_real = int(real.sum())
            budget = min(view.budget, n_real)
            col = block.sum(dim=(0, 1)).masked_fill(~real, float("-inf"))
            lead = min(self.lead_columns, max(1, budget // 8))
            col[:lead] = float("inf")
            n_col = max(lead, int(budget * self.column_share))
            chosen = col.topk(min(n_col, budget)).indices
            # diagonals, read from the end of the prompt: a key at p lies on diagonal end - p
            span = int(kpos[real].max() - kpos[real].min()) + 2 + (end - int(kpos[real].max()))
            diag = _diagonal_mass(block, qpos, kpos, max(span, 1))
            dist = (end - kpos).clamp(min=0, max=diag.numel() - 1)
            line = diag[dist].clone()
            line[(end - kpos) < self.lead_diagonals] = float("inf")
            line = line.masked_fill(~real, float("-inf"))
            line[chosen] = float("-inf")
            rest = budget - chosen.numel()
            if rest > 0:
                chosen = torch.cat([chosen, line.topk(rest).indices])
            picks.append(chosen.sort().values)
        return Keep(tuple(picks))
