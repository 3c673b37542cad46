"""Topic shortlist: keys grouped by a few rounds of nearest-centre assignment (ClusterKV's grouping); the closing
queries score each group through its centre, and whole groups are kept best first, tokens untouched."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class TopicShortlist(EvictionMethod):
    name = "topic_shortlist"
    query_window = 16
    groups = 16

    def select(self, view: LayerView) -> Keep:
        q = view.group(view.queries.float(), "mean")  # (H, N, D)
        out = []
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
            c = min(self.groups, k.shape[0])
            centres = k[torch.linspace(0, k.shape[0] - 1, c).long()]
            for _ in range(3):
                owner = torch.cdist(k, centres).argmin(dim=1)
                count = torch.zeros(c).index_add_(0, owner, torch.ones(k.shape[0])).clamp_min(1)[:, None]
                centres = torch.zeros_like(centres).index_add_(0, owner, k) / count
            fit = (q[h] @ centres.T).softmax(-1).sum(0)
            score = fit[owner] + 1e-3 * (k @ q[h, -1])
            out.append(score.topk(min(view.budget, k.shape[0])).indices.sort().values)
        return Keep(tuple(out))
