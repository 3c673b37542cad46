import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 64
    n_first = 4

    def _axis(self, q: torch.Tensor) -> torch.Tensor:
        # dominant direction of one head's queries, oriented so that the queries lie on its positive side
        _, _, vh = torch.linalg.svd(q.float(), full_matrices=False)
        axis = vh[0]
        return axis if float((q.float() @ axis).mean()) >= 0 else -axis

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        axes = torch.stack([self._axis(view.queries[h]) for h in range(view.queries.shape[0])])   # (H_q, D)
        axes = axes.view(view.n_kv_heads, g, -1).mean(dim=1)                                      # (H, D)
        proj = torch.einsum("htd,hd->ht", view.keys.float(), axes)
        proj[:, : self.n_first] = float("inf")
        return Keep.from_topk(proj, view.budget, view.valid)
