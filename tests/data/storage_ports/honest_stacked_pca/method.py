"""Layer-wide principal keys: one principal basis for all keys of a layer (every head's tokens stacked), the window
queries and keys compared in its leading directions (Loki's approximate scores, with one basis per layer)."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class LayerBasis(EvictionMethod):
    name = "layer_basis"
    query_window = 16
    rank = 16

    def select(self, view: LayerView) -> Keep:
        h, t, d = view.keys.shape
        stacked = view.keys.float().reshape(-1, d)
        _, _, vh = torch.linalg.svd(stacked - stacked.mean(0), full_matrices=False)
        basis = vh[: self.rank].T
        kr = view.keys.float() @ basis
        qr = view.group(view.queries.float(), "mean") @ basis
        s = torch.softmax(qr @ kr.transpose(1, 2), dim=-1).sum(1)
        return Keep.from_topk(s, view.budget, view.valid)
