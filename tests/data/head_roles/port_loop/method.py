"""Two-speed heads: heads whose attention stays near the end read a rolling span; the rest pick tokens."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _spill(att: torch.Tensor, keep_first: int, span: int) -> list[float]:
    out = []
    for row in att:
        total = float(row.sum()) + 1e-9
        near = float(row[:keep_first].sum() + row[row.shape[0] - span:].sum())
        out.append(1.0 - near / total)
    return out


class TwoSpeed(EvictionMethod):
    name = "two_speed"
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t or view.queries is None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        att = view.group(view.attention().sum(1), "max")
        spill = _spill(att, 2, max(1, b - 2))
        ranked = sorted(range(len(spill)), key=lambda h: spill[h])
        slow = set(ranked[len(ranked) // 3:])
        heads = []
        for h in range(att.shape[0]):
            if h in slow:
                s = att[h].clone()
                s[t - 8:] = float("inf")
                heads.append(s.topk(b).indices.sort().values)
            else:
                heads.append(torch.cat([torch.arange(2), torch.arange(t - (b - 2), t)]))
        return Keep(tuple(heads))
