"""A port of Q-Filters (Godey et al., 2025, "Q-Filters: Leveraging QK Geometry for Efficient KV Cache
Compression", arXiv 2503.02812) to this harness's board B_online.

Q-Filters observes that each head's queries share a dominant direction, so a key's projection on that direction
approximates the attention it will receive; keys are ranked by that projection, with no attention computed.
The paper estimates each head's direction offline, once, from the SVD of queries collected on a calibration
corpus. This harness gives a method no calibration pass, so this port takes the SVD of the context's own last
64 queries at compression time instead (a stand-in for the offline filter), orients the direction so that
those queries project positively on it, scores every key by its projection averaged over the KV head's query
heads, and keeps the top scores. Keeping the last 8 positions outright is this port's own addition.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class QFiltersPort(EvictionMethod):
    name = "qfilters_port"
    query_window = 64
    keep_last = 8

    def filters(self, view: LayerView) -> torch.Tensor:
        """(H_q, D): the leading right singular vector of each query head's queries, signed to agree with them."""
        q = view.queries.float()
        _, _, vh = torch.linalg.svd(q, full_matrices=False)
        u = vh[:, 0, :]
        sign = torch.sign((q @ u[:, :, None]).squeeze(-1).mean(dim=1))
        return u * torch.where(sign == 0, torch.ones_like(sign), sign)[:, None]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        u = self.filters(view)                                          # (H_q, D)
        g = view.model.group_size
        proj = torch.einsum("htd,hgd->hgt", view.keys.float(), u.view(-1, g, u.shape[-1]))
        scores = proj.mean(dim=1)                                       # (H_kv, T)
        last = int(view.positions.max())
        scores = scores.masked_fill(view.positions > last - self.keep_last, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
