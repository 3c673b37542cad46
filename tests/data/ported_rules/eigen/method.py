"""Shared-axes retention: the question's queries and the context's keys are described in a few common axes (the
directions that carry most of their joint energy); the question's attention read in those axes ranks the tokens."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _axes(a: torch.Tensor, b: torch.Tensor, share: float) -> torch.Tensor:
    both = torch.cat([a, b], dim=0)
    gram = both.transpose(0, 1) @ both / both.shape[0]
    vals, vecs = torch.linalg.eigh(gram)
    vals, order = vals.flip(0), torch.arange(vals.shape[0] - 1, -1, -1)
    energy = torch.cumsum(vals, 0) / vals.sum()
    r = int((energy < share).sum()) + 1
    return vecs[:, order[:r]]


class SharedAxes(EvictionMethod):
    name = "shared_axes"
    question_queries = True
    energy = 0.85

    def select(self, view: LayerView) -> Keep:
        g = view.model.group_size
        rows = []
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
            q = view.queries[h * g:(h + 1) * g].float().reshape(-1, k.shape[-1])
            basis = _axes(k, q, self.energy)
            lk, lq = k @ basis, q @ basis
            w = torch.softmax(lq @ lk.T / k.shape[-1] ** 0.5, dim=-1)
            rows.append(w.sum(0))
        s = torch.stack(rows)
        s[:, :4] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
