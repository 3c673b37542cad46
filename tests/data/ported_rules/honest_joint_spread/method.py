"""Off-axis retention: keys that lie far outside the directions the question and the context share (their
residual after projection on the joint principal axes) carry what the shared axes cannot say; they are kept
first, then by window attention."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class OffAxis(EvictionMethod):
    name = "off_axis"
    question_queries = True
    rank = 8

    def select(self, view: LayerView) -> Keep:
        g = view.model.group_size
        att = view.group(view.attention(), "mean").sum(1)
        out = []
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
            q = view.queries[h * g:(h + 1) * g].float().reshape(-1, k.shape[-1])
            _, _, vt = torch.linalg.svd(torch.cat([k, q]), full_matrices=False)
            axes = vt[: self.rank].T
            resid = torch.linalg.vector_norm(k - (k @ axes) @ axes.T, dim=-1)
            out.append(resid / resid.max() + att[h] / att[h].max())
        return Keep.from_topk(torch.stack(out), view.budget, view.valid)
