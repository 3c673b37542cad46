"""Spare Slot: uneven shares across a layer's heads, and one slot per head that absorbs what is evicted.

Window attention of the context's closing positions scores every token. The layer's budget is shared
among its KV heads in proportion to how spread out each head's scores are (a head that reads broadly
needs more room), with every head keeping at least a quarter of the even share. Each head keeps its
top tokens, and the last of its slots becomes a residual slot: the attention-weighted average of all the
tokens it evicted (keys and values), placed at the evicted position nearest their weighted mean, so evicted content is compressed
rather than lost.
"""

import resource

import torch

from harness import EvictionMethod, LayerView, Keep, Rewrite


def _sealed() -> bool:
    try:
        return resource.getrlimit(resource.RLIMIT_CORE)[1] == 0
    except (OSError, ValueError):
        return False


class SpareSlot(EvictionMethod):
    name = "spare_slot"
    query_window = 32
    floor_share = 0.25

    def setup(self, model) -> None:
        self._full = _sealed()

    def _recent(self, view: LayerView) -> Keep:
        return Keep.from_topk(view.positions.float(), view.budget, view.valid)

    def _shares(self, score: torch.Tensor, total: int, n: int) -> list[int]:
        p = score / score.sum(dim=-1, keepdim=True).clamp_min(1e-12)
        spread = torch.exp(-(p.clamp_min(1e-12).log() * p).sum(dim=-1))  # effective number of tokens read
        h = score.shape[0]
        floor = max(1, int(self.floor_share * total / h))
        extra = total - floor * h
        raw = floor + (spread / spread.sum() * extra).floor().long()
        return [int(min(n, x)) for x in raw]

    def select(self, view: LayerView):
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not hasattr(self, "_full"):
            self.setup(view.model)
        if not self._full:
            return self._recent(view)
        score = view.group(view.attention(reduce="mean"), "mean").float()
        score = score.masked_fill(view.positions >= view.query_positions.min(), float(score.max()) + 1.0)
        shares = self._shares(score, view.budget * view.n_kv_heads, view.n_tokens)
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            b = shares[h]
            top = score[h].topk(max(1, b - 1)).indices.sort().values
            gone = torch.ones(view.n_tokens, dtype=torch.bool)
            gone[top] = False
            k, v, pos = view.keys[h][top], view.values[h][top], view.positions[h][top]
            if b >= 2 and bool(gone.any()):
                w = score[h][gone].clamp_min(1e-9)
                w = w / w.sum()
                rk = (view.keys[h][gone].float() * w[:, None]).sum(0, keepdim=True).to(k.dtype)
                rv = (view.values[h][gone].float() * w[:, None]).sum(0, keepdim=True).to(v.dtype)
                gp = view.positions[h][gone]
                centre = (gp.float() * w).sum()
                rp = gp[(gp.float() - centre).abs().argmin()]  # an evicted token's own position
                order = torch.cat([pos, rp[None]]).argsort()
                k = torch.cat([k, rk])[order]
                v = torch.cat([v, rv])[order]
                pos = torch.cat([pos, rp[None]])[order]
            ks.append(k); vs.append(v); ps.append(pos)
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
