"""Mass-quota column retention (board A).

Attention maps of long prompts are mostly two things: a band along the diagonal (each token reading its
neighbours) and a few vertical stripes (columns that every later row keeps returning to). We keep exactly those:

* the neighbourhood band: the newest ``band_frac`` of the prompt, which the next tokens read first;
* the stripes: columns ranked by the attention mass a thinned set of rows pays them, taken in order until they
  hold ``mass_quota`` of that mass. Rows are thinned by taking the last row of every ``row_stride``-row slice of
  the prompt plus the final ``tail_rows`` rows in full, so the ranking sees the whole prompt at a fraction of
  the cost.

The stripe count is adaptive: a head whose mass sits in few columns keeps few, and the layer may keep fewer
tokens than its budget.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class MassQuotaColumns(EvictionMethod):
    name = "mass_quota_columns"
    query_window = 1 << 20  # every prompt row; thinned below
    row_stride = 16
    tail_rows = 32
    mass_quota = 0.95
    band_frac = 0.08

    def _rows(self, qpos: torch.Tensor) -> torch.Tensor:
        n = qpos.numel()
        picked = torch.zeros(n, dtype=torch.bool, device=qpos.device)
        picked[self.row_stride - 1:: self.row_stride] = True
        picked[max(0, n - self.tail_rows):] = True
        return picked

    def _column_mass(self, view: LayerView) -> torch.Tensor:
        q, qpos = view.queries, view.query_positions
        rows = self._rows(qpos)
        q, qpos = q[:, rows].float(), qpos[rows]
        g = view.model.group_size
        h_kv, t, d = view.keys.shape
        keys = view.keys.float()
        mass = torch.zeros(h_kv, t, device=keys.device)
        for lo in range(0, q.shape[1], 64):
            qc = q[:, lo: lo + 64].reshape(h_kv, g, -1, d)
            logit = torch.einsum("hgnd,htd->hgnt", qc, keys) * view.model.scale
            late = view.positions[:, None, None, :] > qpos[lo: lo + 64][None, None, :, None]
            logit = logit.masked_fill(late, float("-inf"))
            mass += logit.softmax(-1).nan_to_num(0.0).sum(dim=(1, 2))
        return mass

    def select(self, view: LayerView) -> Keep:
        t, budget = view.n_tokens, view.budget
        if budget >= t or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), budget, view.valid)
        band = max(1, int(round(self.band_frac * t)))
        mass = self._column_mass(view)
        out = []
        for h in range(view.n_kv_heads):
            order = torch.argsort(view.positions[h], descending=True)
            newest = order[:band]
            if band >= budget:
                out.append(newest[:budget].sort().values)
                continue
            m = mass[h].clone()
            m[newest] = 0.0
            ranked = torch.argsort(m, descending=True)
            share = m[ranked].cumsum(0) / m.sum().clamp_min(1e-12)
            need = int((share < self.mass_quota).sum()) + 1
            stripes = ranked[: min(need, budget - band)]
            out.append(torch.cat([newest, stripes]).unique().sort().values)
        return Keep(tuple(out))
