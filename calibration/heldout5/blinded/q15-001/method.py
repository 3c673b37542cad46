"""Length-calibrated attention (board B_online)."""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class LengthCalibrated(EvictionMethod):
    name = "length_calibrated"
    query_window = 64
    chunk = 16

    @staticmethod
    def _row_softmax(logits: torch.Tensor) -> torch.Tensor:
        top = logits.amax(dim=-1, keepdim=True)
        top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
        ex = torch.exp(logits - top)
        return ex / ex.sum(dim=-1, keepdim=True).clamp_min(1e-30)

    def _accumulate(self, view: LayerView) -> torch.Tensor:
        g = view.model.group_size
        k = view.keys.float()
        valid = view.valid_mask()
        n_vis = valid.sum(dim=1).float()                                  # keys per head
        ref = float(view.queries.shape[1])
        acc = torch.zeros(view.keys.shape[:2], device=k.device)
        for start in range(0, view.queries.shape[1], self.chunk):
            q = view.queries[:, start:start + self.chunk].float()
            qp = view.query_positions[start:start + self.chunk]
            for h in range(view.n_kv_heads):
                lg = torch.einsum("gcd,td->gct", q[h * g:(h + 1) * g], k[h]) * view.model.scale
                seen = (view.positions[h][None, :] <= qp[:, None]) & valid[h][None, :]   # (c, T)
                visible = seen.sum(dim=1).clamp_min(2).float()
                temp = torch.log(visible) / math.log(max(2.0, ref))          # entropy-keeping rescale
                lg = lg * temp[None, :, None]
                lg = lg.masked_fill(~seen[None], float("-inf"))
                acc[h] += self._row_softmax(lg).sum(dim=(0, 1)) / g
        return acc / n_vis.clamp_min(1)[:, None] * n_vis.mean()

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        acc = self._accumulate(view)
        vnorm = view.values.float().norm(dim=-1)
        score = acc * vnorm / vnorm.mean(dim=1, keepdim=True).clamp_min(1e-6)
        score = score.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
