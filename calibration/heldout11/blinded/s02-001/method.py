"""Landmark-lens retention (board A).

The question decides what matters, but reading every key at full width to find out is the expensive part. We
read the prompt through a cheap lens fitted to each question row and keep the tokens the lens says the question
will look at, plus the newest ``recent`` tokens.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _lens(q: torch.Tensor, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row: the ``width`` coordinates carrying the row, and the sharpening that restores its scale."""
    mag = q.abs()
    idx = mag.topk(width, dim=-1).indices
    kept = mag.gather(-1, idx).sum(-1)
    temp = (q.shape[-1] * kept / mag.sum(-1).clamp_min(1e-9)).sqrt()
    return idx, temp


class LandmarkLens(EvictionMethod):
    name = "landmark_lens"
    query_window = 32
    question_queries = True
    width_frac = 0.25
    recent = 16

    def _reading(self, view: LayerView) -> torch.Tensor:
        q = view.queries.float()  # (H_q, N, D)
        qpos = view.query_positions
        g = view.model.group_size
        hq, n, d = q.shape
        width = max(1, int(d * self.width_frac))
        idx, temp = _lens(q, width)  # (H_q, N, r), (H_q, N)
        keys = view.keys.float().repeat_interleave(g, dim=0)  # (H_q, T, D)
        total = torch.zeros(hq, view.n_tokens, device=q.device)
        for j in range(n):
            cols = idx[:, j]  # (H_q, r)
            ksub = keys.gather(2, cols[:, None, :].expand(-1, keys.shape[1], -1))
            qsub = q[:, j].gather(1, cols)
            logit = torch.einsum("hr,htr->ht", qsub, ksub) / temp[:, j, None]
            logit = logit.masked_fill(view.positions.repeat_interleave(g, 0) > qpos[j], float("-inf"))
            if view.valid is not None:
                logit = logit.masked_fill(~view.valid.repeat_interleave(g, 0), float("-inf"))
            total += logit.softmax(-1).nan_to_num(0.0)
        return view.group(total, "sum")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._reading(view)
        pos = view.positions.float()
        newest = pos >= pos.amax(dim=1, keepdim=True) - (self.recent - 1)
        score = score.masked_fill(newest, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
