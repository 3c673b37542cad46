"""Rolling audition (board B_online).

The context is replayed in slices of 128 positions. Every slice's own queries audition the tokens currently held
(the survivors of earlier slices plus the slice itself): a token's merit is the largest attention any single
auditioning query has paid it so far. When the holders outgrow the budget, the lowest-merit ones leave for good,
except for the newest 24 tokens of the slice that just arrived, which have not been heard by enough queries yet.
The budget is therefore enforced all along the context, as a streaming reader would have to, and the final holders
are what the layer keeps.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention

NEG = float("-inf")


class RollingAudition(EvictionMethod):
    name = "rolling_audition"
    query_window = 1 << 20      # every context query: each slice auditions with its own
    slice_len = 128
    fresh_guard = 24
    tail = 64                   # queries used when the view does not carry the whole context
    kernel = 5

    def setup(self, model):
        self._layers = tuple(model.attention_layers)
        self._previous = None

    # -- bookkeeping -------------------------------------------------------------------------------------------
    def _continues(self, view: LayerView) -> bool:
        order = getattr(self, "_layers", None) or tuple(view.model.attention_layers)
        if not order or view.layer == order[0]:
            self._previous = view.layer
            return True
        prev = getattr(self, "_previous", None)
        at = order.index(view.layer) if view.layer in order else -1
        ok = prev is not None and at > 0 and order[at - 1] == prev
        self._previous = view.layer if ok else None
        return ok

    # -- the audition ------------------------------------------------------------------------------------------
    def _holders(self, view: LayerView) -> torch.Tensor:
        h, t, d = view.keys.shape
        g = view.model.group_size
        keys = view.keys.float()
        pos = view.positions
        live = view.valid_mask()
        q = view.queries.float()
        qpos = view.query_positions.to(pos.device)
        cap = view.budget
        held = live & (pos < int(qpos.min()))
        merit = torch.zeros(h, t, device=keys.device)
        for a in range(0, q.shape[1], self.slice_len):
            qs, qp = q[:, a:a + self.slice_len], qpos[a:a + self.slice_len]
            c = qs.shape[1]
            lo, hi = int(qp.min()), int(qp.max())
            arriving = live & (pos >= lo) & (pos <= hi)
            held = held | arriving
            logits = torch.einsum("hgcd,htd->hgct", qs.reshape(h, g, c, d), keys) * view.model.scale
            shut = (~held)[:, None, None, :] | (pos[:, None, None, :] > qp.view(1, 1, c, 1))
            heard = logits.masked_fill(shut, NEG).softmax(dim=-1).nan_to_num(0.0)
            merit = torch.maximum(merit, heard.amax(dim=(1, 2)))
            if int(held.sum(dim=1).max()) <= cap:
                continue
            rank = merit.masked_fill(arriving & (pos > hi - self.fresh_guard), float("inf"))
            rank = rank.masked_fill(~held, NEG)
            top = rank.topk(min(cap, t), dim=-1).indices
            kept = torch.zeros_like(held)
            kept.scatter_(1, top, True)
            held = kept & held
        return held

    def _plain(self, view: LayerView) -> Keep:
        q = view.queries[:, -self.tail:]
        qpos = view.query_positions[-self.tail:]
        w = reference_attention(q, view.keys, view.positions, qpos, view.model.group_size, view.valid,
                                scale=view.model.scale, reduce="mean")
        s = view.group(w, "mean")
        s = F.avg_pool1d(s[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        s = s.masked_fill(view.positions >= int(qpos.min()), float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        steady = self._continues(view)
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not steady:
            return self._plain(view)
        held = self._holders(view)
        out = []
        for i in range(view.n_kv_heads):
            idx = torch.nonzero(held[i]).flatten()
            out.append(idx[: view.budget])
        return Keep(tuple(out))
