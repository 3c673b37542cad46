import torch

from harness.api import EvictionMethod, Keep, LayerView, rotate_half
from sklearn.cluster import KMeans


class Commuting(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        cos, sin = view.model.rope(view.layer).angles(view.positions[0])
        k = view.keys.float()
        base = k * cos - rotate_half(k) * sin
        out = []
        for h in range(base.shape[0]):
            km = KMeans(n_clusters=16, n_init=1).fit(base[h].numpy())
            code = torch.tensor(km.cluster_centers_[km.labels_], dtype=torch.float32)
            code = code * cos + rotate_half(code) * sin
            s = view.queries[h * view.group_size:(h + 1) * view.group_size].float() @ code.T
            out.append(torch.softmax(s, dim=-1).sum(dim=0))
        return Keep.from_topk(torch.stack(out), view.budget, view.valid)
