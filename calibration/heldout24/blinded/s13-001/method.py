"""Principal-axis reader (board A, question-aware prefill).

Keys of a head live mostly in a few directions. The question is read in that frame: per layer and KV head, the
key cloud's principal axes are found, keys and the question rows are projected onto the leading axes that
carry most of the key variance, and tokens are ranked by the softmax of the projected scores, summed over the
question rows and the head's query heads. The question rows' own tail is kept.
"""

from __future__ import annotations

import numpy as np
import torch

from harness import EvictionMethod, Keep, LayerView


class PrincipalAxisReader(EvictionMethod):
    name = "principal_axis_reader"
    query_window = 8
    question_queries = True
    axes_share = 0.25         # leading axes kept, as a share of head_dim

    def _frame(self, keys: np.ndarray) -> np.ndarray:
        cov = keys.T @ keys / max(1, keys.shape[0])
        _, vec = np.linalg.eigh(cov)                       # ascending eigenvalues
        r = max(2, int(self.axes_share * keys.shape[1]))
        return vec[:, ::-1][:, :r].copy()                  # (D, r)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        ok = view.valid_mask()
        scores = torch.full(view.keys.shape[:2], float("-inf"), device=view.keys.device)
        for h in range(view.n_kv_heads):
            idx = ok[h].nonzero().flatten()
            k = view.keys[h, idx].float().cpu().numpy()
            frame = torch.from_numpy(self._frame(k))
            kr = torch.from_numpy(k) @ frame                                     # (T, r)
            q = view.queries[h * g:(h + 1) * g].float().cpu() @ frame            # (g, R, r)
            logits = torch.einsum("grd,td->grt", q, kr) * view.model.scale
            qpos = view.query_positions.cpu().view(1, -1, 1)
            logits = logits.masked_fill(view.positions[h, idx].cpu().view(1, 1, -1) > qpos, float("-inf"))
            scores[h, idx] = logits.softmax(-1).sum((0, 1)).to(scores.device)
        tail = view.positions >= view.query_positions.min()
        return Keep.from_topk(scores.masked_fill(tail, float("inf")), view.budget, view.valid)
