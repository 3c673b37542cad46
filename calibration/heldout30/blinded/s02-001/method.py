"""Sextant: question-guided keep sets read through a coarse facet vocabulary of the keys.

Every key is cut into facets (equal slices of its channels). Within each facet the layer's keys are summarised by
a small vocabulary of prototypes, fitted on the spot by a few assignment/averaging sweeps, and each key is read
back as the concatenation of its facets' nearest prototypes. The question rows (and the last prompt rows) then
score the context through that coarse reading: their logits against the read-back keys, softmaxed per row,
summed over the rows and over each KV head's query heads. The opening tokens and the rows themselves are kept;
the remaining budget goes to the best-scored tokens.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class Sextant(EvictionMethod):
    name = "sextant"
    question_queries = True
    query_window = 8
    facets = 8          # slices per key
    vocab = 16          # prototypes per slice
    sweeps = 6
    opening = 4

    def _fit(self, pts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """pts (B, T, d) -> codes (B, T) and prototypes (B, V, d)."""
        b, t, d = pts.shape
        v = min(self.vocab, t)
        seeds = torch.linspace(0, t - 1, v, device=pts.device).round().long()
        protos = pts[:, seeds].clone()
        shift = (torch.arange(b, device=pts.device) * v)[:, None]
        for _ in range(self.sweeps):
            codes = torch.cdist(pts, protos).argmin(dim=-1)
            slots = (codes + shift).reshape(-1)
            sums = torch.zeros(b * v, d, device=pts.device, dtype=pts.dtype).index_add_(0, slots, pts.reshape(-1, d))
            hits = torch.bincount(slots, minlength=b * v).to(pts.dtype)
            moved = (sums / hits.clamp_min(1.0)[:, None]).view(b, v, d)
            protos = torch.where((hits > 0).view(b, v, 1), moved, protos)
        return torch.cdist(pts, protos).argmin(dim=-1), protos

    def _read_back(self, keys: torch.Tensor) -> torch.Tensor:
        h, t, dim = keys.shape
        f = self.facets if dim % self.facets == 0 else 1
        d = dim // f
        pts = keys.float().reshape(h, t, f, d).permute(0, 2, 1, 3).reshape(h * f, t, d)
        codes, protos = self._fit(pts)
        approx = torch.gather(protos, 1, codes[..., None].expand(-1, -1, d))
        return approx.reshape(h, f, t, d).permute(0, 2, 1, 3).reshape(h, t, dim)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h_kv, t, dim = view.keys.shape
        g = view.model.group_size
        approx = self._read_back(view.keys)
        q = view.queries.float().reshape(h_kv, g, -1, dim)
        logits = torch.einsum("hgnd,htd->hgnt", q, approx) * view.model.scale
        qpos = view.query_positions.to(logits.device)
        hidden = view.positions[:, None, None, :] > qpos.view(1, 1, -1, 1)
        hidden = hidden | ~view.valid_mask()[:, None, None, :]
        probs = logits.masked_fill(hidden, float("-inf")).softmax(dim=-1).nan_to_num(0.0)
        score = probs.sum(dim=(1, 2))
        pinned = (view.positions < self.opening) | (view.positions >= qpos.min())
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
