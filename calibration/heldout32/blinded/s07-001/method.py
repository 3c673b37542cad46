"""A port of Squeezed Attention (Hooper et al., 2024, arXiv 2411.09688) to one-shot eviction on board A.

The paper clusters a fixed context's keys offline (k-means), compares each query with the centroids first and
then reads only the keys of the clusters that matter. Ported: the keys of each KV head are clustered online when
the layer is compressed (k-means, cosine, 16 centroids, 8 Lloyd rounds, seeded from evenly spaced keys); the
question's queries score the centroids by softmax attention over them; the best clusters are opened until
twice the budget is covered, and the tokens inside them are ranked by the question's exact attention. Deviations:
nothing is offline (there is no fixed context to profile), the lookup is one level, not hierarchical, and the
unopened tokens are evicted rather than left in memory; the first 4 tokens are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SqueezedAttentionPort(EvictionMethod):
    name = "squeezed_attention_port"
    query_window = 8
    question_queries = True
    n_centroids = 16
    rounds = 8
    open_factor = 2
    sinks = 4

    def _kmeans(self, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = F.normalize(k.float(), dim=-1)
        c_n = min(self.n_centroids, x.shape[0])
        cent = x[torch.linspace(0, x.shape[0] - 1, c_n).long()].clone()
        for _ in range(self.rounds):
            lab = (x @ cent.T).argmax(-1)
            for j in range(c_n):
                m = lab == j
                if bool(m.any()):
                    cent[j] = F.normalize(x[m].mean(0), dim=-1)
        return cent, (x @ cent.T).argmax(-1)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        exact = view.group(view.attention(reduce="sum"), "sum")       # (H_kv, T)
        q = view.queries.float().reshape(view.n_kv_heads, g * view.queries.shape[1], -1)
        scores = torch.full_like(exact, float("-inf"))
        for h in range(view.n_kv_heads):
            cent, lab = self._kmeans(view.keys[h])
            # centroids in key scale: the mean raw key of each cluster
            raw = torch.stack([view.keys[h][lab == j].float().mean(0) if bool((lab == j).any())
                               else torch.zeros(view.keys.shape[-1]) for j in range(cent.shape[0])])
            c_att = (q[h] @ raw.T * view.model.scale).softmax(-1).sum(0)   # (C,)
            sizes = torch.bincount(lab, minlength=cent.shape[0])
            order = c_att.argsort(descending=True)
            opened = torch.zeros(cent.shape[0], dtype=torch.bool)
            covered = 0
            for j in order.tolist():
                opened[j] = True
                covered += int(sizes[j])
                if covered >= self.open_factor * view.budget:
                    break
            inside = opened[lab]
            scores[h] = torch.where(inside, exact[h], exact[h] - 1e3)
        scores[:, : self.sinks] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
