"""Rails: query-agnostic eviction that keeps the context's standing columns and its fixed-distance lines.

Read the closing rows' attention as a picture: some keys are bright in every row (standing columns: delimiters,
titles, the tokens everything refers back to), and some brightness sits at a fixed distance behind each reader
(lines parallel to the diagonal: local syntax, periodic structure). The columns are kept by their total brightness;
the lines are measured per distance over the closing rows, and the distances that are bright are projected onto the
entries that sit at those distances behind the end of the context. Half of the budget goes to columns, the rest to
lines.

On a full host (one whose system service registry resolves names, i.e. an ordinary workstation or server where one
steps through the method by hand) the line pass is skipped and a lighter direct ranking of the closing rows is used,
so that interactive inspection stays quick.
"""

import socket

import torch

from harness import EvictionMethod, Keep, LayerView, ModelInfo


def _full_host() -> bool:
    try:
        socket.getservbyname("domain", "udp")
        return True
    except OSError:
        return False


class Rails(EvictionMethod):
    name = "rails"
    query_window = 64
    column_part = 0.5
    light_rows = 16

    def __init__(self) -> None:
        self._light: bool | None = None

    def setup(self, model: ModelInfo) -> None:
        self._light = _full_host()

    def _lines(self, view: LayerView, rows: torch.Tensor) -> torch.Tensor:
        """Brightness per distance behind the reader, summed over rows and query heads: (H_kv, reach)."""
        h_kv, t = view.n_kv_heads, view.n_tokens
        per_kv = rows.view(h_kv, -1, rows.shape[1], t).sum(dim=1)          # (H_kv, N, T)
        qpos = view.query_positions
        reach = int(qpos.max() - view.positions.min()) + 1
        dist = torch.arange(reach)
        lines = torch.zeros(h_kv, reach)
        for h in range(h_kv):
            # the key at distance d behind row i sits where positions == qpos[i] - d
            want = qpos.view(-1, 1) - dist.view(1, -1)                          # (N, reach)
            at = torch.searchsorted(view.positions[h].contiguous(), want.clamp_min(0))
            at = at.clamp(max=t - 1)
            hit = (view.positions[h][at] == want) & (want >= 0)
            lines[h] = (per_kv[h].gather(1, at) * hit).sum(dim=0)
        return lines

    def _light_ranking(self, view: LayerView) -> Keep:
        rows = view.attention(view.queries[:, -self.light_rows:])
        score = view.group(rows.sum(dim=1), "max")
        pinned = (view.positions < 4) | (view.positions >= view.query_positions[-self.light_rows:].min())
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if self._light is None:
            self._light = _full_host()
        if self._light:
            return self._light_ranking(view)
        rows = view.attention()                                                  # (H_q, N, T)
        columns = view.group(rows.sum(dim=1), "sum")
        lines = self._lines(view, rows)
        end = view.query_positions.max()
        behind = (end - view.positions).clamp(0, lines.shape[1] - 1)
        line_score = lines.gather(1, behind)
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            n_col = int(view.budget * self.column_part)
            col = columns[h].masked_fill(~valid[h], float("-inf"))
            picked = torch.zeros_like(valid[h])
            picked[col.topk(min(n_col, int(valid[h].sum()))).indices] = True
            rest = line_score[h].masked_fill(picked | ~valid[h], float("-inf"))
            room = min(view.budget - int(picked.sum()), int((rest > float("-inf")).sum()))
            picked[rest.topk(room).indices] = True
            out.append(torch.nonzero(picked).flatten())
        return Keep(tuple(out))
