"""Routing-attention eviction: a training-free port of the Routing Transformer's content-based routing
(Roy, Saffar, Vaswani and Grangier, "Efficient Content-Based Sparse Attention with Routing Transformers",
TACL 2021, arXiv 2003.05997) to question-aware prefill eviction (board A).

The Routing Transformer clusters queries and keys with online (mini-batch) spherical k-means over shared centroids
and lets each query attend only to the keys routed to its own cluster. Here, per KV head and layer:

- the unit-normalised keys and the unit-normalised question queries (the question span and the closing 8 prompt
  rows, all query heads of the group) are clustered together by spherical k-means with k = ceil(sqrt(T)) centroids
  (the paper's choice of about sqrt(n) clusters), 6 Lloyd iterations from evenly spaced keys;
- each query attends, causally and with the model's scale, only to the keys of its own cluster (softmax within the
  cluster, as in routing attention); a token's score is that routed attention summed over the question's rows and
  averaged over the query heads of the group;
- the budget goes to the question span, four opening tokens, then the tokens with the highest routed attention; if
  fewer tokens than the budget received any routed attention, the rest go by the plain question attention.

Deviations from the paper: the paper learns its projections with the centroids updated by exponential moving
average during training; nothing is trained here, the centroids are fitted per layer at compression time by batch
Lloyd iterations, and routing decides which entries stay in the cache rather than a sparse attention pattern.
The opening tokens (attention sinks, Xiao et al. 2023, arXiv 2309.17453) and the plain-attention fill are ours.
"""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class RoutingEviction(EvictionMethod):
    name = "routing_eviction"
    question_queries = True
    query_window = 8
    iters = 6
    opening = 4

    def _route(self, view: LayerView, h: int, n: int) -> torch.Tensor:
        g = view.model.group_size
        k = view.keys[h, :n].float()
        q = view.queries[h * g:(h + 1) * g].float()  # (g, N, D)
        qpos = view.query_positions
        pos = view.positions[h, :n]
        kn, qn = F.normalize(k, dim=-1), F.normalize(q.reshape(-1, q.shape[-1]), dim=-1)
        pts = torch.cat([kn, qn])
        c = max(1, math.ceil(math.sqrt(n)))
        cent = kn[torch.linspace(0, n - 1, c).round().long()].clone()
        for _ in range(self.iters):
            lab = (pts @ cent.T).argmax(-1)
            summed = torch.zeros_like(cent).index_add_(0, lab, pts)
            filled = torch.bincount(lab, minlength=c) > 0
            cent[filled] = F.normalize(summed[filled], dim=-1)
        klab = (kn @ cent.T).argmax(-1)  # (T,)
        qlab = (qn @ cent.T).argmax(-1).view(g, -1)  # (g, N)
        logits = torch.einsum("gnd,td->gnt", q, k) * view.model.scale
        allowed = (qlab[..., None] == klab[None, None, :]) & (pos[None, None, :] <= qpos[None, :, None])
        routed = logits.masked_fill(~allowed, float("-inf")).softmax(-1).nan_to_num(0.0)
        plain = logits.masked_fill(pos[None, None, :] > qpos[None, :, None], float("-inf")).softmax(-1)
        return routed.sum(1).mean(0), plain.sum(1).mean(0)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        qstart = int(view.query_positions.min())
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            pos = view.positions[h, :n]
            routed, plain = self._route(view, h, n)
            keep = (pos < self.opening) | (pos >= qstart)
            left = view.budget - int(keep.sum())
            if left > 0:
                hit = (routed > 0) & ~keep
                take = min(left, int(hit.sum()))
                if take:
                    keep[routed.masked_fill(~hit, float("-inf")).topk(take).indices] = True
                left = view.budget - int(keep.sum())
            if left > 0:
                keep[plain.masked_fill(keep, float("-inf")).topk(min(left, int((~keep).sum()))).indices] = True
            idx = torch.nonzero(keep).flatten()
            out.append(idx[-view.budget:] if idx.numel() > view.budget else idx)
        return Keep(tuple(out))
