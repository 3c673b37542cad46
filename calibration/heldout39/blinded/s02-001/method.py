"""Ripple Cost: keep the tokens whose removal would move the question's read-out the most.

For every question query, dropping token i renormalises the softmax over the rest: the read-out moves by
a_i / (1 - a_i) * (v_i - o), where a_i is the query's weight on i, v_i the token's value and o the read-out.
The length of that move, summed over the question's queries and taken at its largest over a KV head's query
heads, is the token's ripple cost; the two leading tokens are kept outright.
"""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _phase_free(view: LayerView) -> list[torch.Tensor]:
    """Per KV head, the valid keys with the layer's rotation undone (position 0 frame)."""
    rope, valid, out = view.rope, view.valid_mask(), []
    for h in range(view.n_kv_heads):
        k = view.keys[h][valid[h]].float()
        p = view.positions[h][valid[h]]
        out.append(rope.apply(k, -p) if rope is not None else k)
    return out


def _settled(view: LayerView) -> bool:
    """Whether the keys carry a shared offset direction once their rotation is undone."""
    spread = []
    for k in _phase_free(view):
        if k.shape[0] < 2:
            return False
        spread.append(float(k.mean(0).norm() / k.norm(dim=-1).mean().clamp_min(1e-6)))
    floor = max(0.25, 4.0 / math.sqrt(view.n_tokens))
    return float(torch.tensor(spread).median()) >= floor


class RippleCost(EvictionMethod):
    name = "ripple_cost"
    question_queries = True
    lead = 2
    pool = 5

    def _ripple(self, view: LayerView) -> torch.Tensor:
        a = view.attention()                                      # (H_q, N, T)
        g = view.model.group_size
        hkv, t, d = view.values.shape
        v = view.values.float()
        a4 = a.reshape(hkv, g, a.shape[1], t)
        o = torch.einsum("hgnt,htd->hgnd", a4, v)                   # read-out per query
        vv = (v * v).sum(-1)[:, None, None, :]                     # |v_i|^2
        oo = (o * o).sum(-1)[..., None]                             # |o|^2
        vo = torch.einsum("hgnd,htd->hgnt", o, v)
        gap = (vv - 2.0 * vo + oo).clamp_min(0.0).sqrt()            # |v_i - o|, (hkv, g, N, T)
        lift = a4 / (1.0 - a4).clamp_min(1e-4)
        cost = (lift * gap).sum(dim=2)                              # over the question's queries
        return cost.amax(dim=1)                                     # (hkv, T)

    def _plain(self, view: LayerView) -> torch.Tensor:
        s = view.group(view.attention().sum(dim=1), "mean")
        return F.avg_pool1d(s[:, None], self.pool, stride=1, padding=self.pool // 2)[:, 0]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._ripple(view) if _settled(view) else self._plain(view)
        score = score.masked_fill(view.positions < self.lead, math.inf)
        return Keep.from_topk(score, view.budget, view.valid)
