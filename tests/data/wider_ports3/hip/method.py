"""Zoom in: the context is cut into wide spans, each summed up by the mean of its keys; the newest query keeps the
spans it likes, splits them in two and looks again, until the spans are single tokens."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class ZoomIn(EvictionMethod):
    name = "zoom_in"
    query_window = 1
    beam = 16

    def select(self, view: LayerView) -> Keep:
        h, n, d = view.keys.shape
        k = view.keys.float()
        q = view.group(view.queries.float(), "mean")[:, -1]
        span = 1
        while span * 2 * self.beam <= n:
            span *= 2
        starts = torch.arange(0, n - span + 1, span).expand(h, -1)
        width = span
        while width > 1:
            width = width // 2
            kids = torch.cat([starts, starts + width], dim=1).clamp(max=n - width)
            rows = kids.repeat_interleave(width, dim=1) + torch.arange(width).repeat(kids.shape[1])
            blocks = k.gather(1, rows[..., None].expand(-1, -1, d)).unflatten(1, (-1, width))
            summary = blocks.mean(dim=2)
            fit = torch.einsum("hbd,hd->hb", summary, q)
            starts = kids.gather(1, fit.topk(min(self.beam, fit.shape[1]), dim=1).indices)
        rank = torch.arange(starts.shape[1], 0, -1, dtype=torch.float32).expand(h, -1)
        score = torch.zeros(h, n).scatter(1, starts, rank)
        return Keep.from_topk(score, view.budget, view.valid)
