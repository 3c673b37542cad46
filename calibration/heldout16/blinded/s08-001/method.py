"""Anchor-solved summaries (board B_online, query-agnostic prefill; rewrites entries with ``Rewrite``).

Eviction throws information away; we would rather re-express the context in fewer, better-chosen entries. Each KV
head's context is cut into ``m`` contiguous stretches, ``m`` being the head's budget. A stretch is represented by an
anchor: the mean of its keys, and the mean of the context queries that fall in it (averaged over the query heads that
share the KV head). The anchor keys become the new cache keys. Their values are solved for, so that a query reading
the anchors gets back what it would have read from the full context:

    new values = pinv(softmax(A_q A_k^T)) . softmax(A_q K^T) . V,

where A_q, A_k are the anchor queries and keys, K, V the full context, with the model's softmax scale and causal
masking of each anchor query. The pseudo-inverse is computed in float64 with a relative cut-off of 1e-4 and the
solved values are clipped to 4x the largest original value norm. Each anchor takes the position of the last token
of its stretch.

Contrast: merging methods (token merging, CaM) average values with fixed weights; here the values are solved from
the context's own read-out.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite


class AnchorSolvedSummaries(EvictionMethod):
    name = "anchor_solved_summaries"
    query_window = 1 << 20  # every context query
    rcond = 1e-4
    clip = 4.0

    def _head(self, view: LayerView, h: int, m: int):
        valid = view.valid_mask()[h]
        k = view.keys[h][valid].double().cpu()
        v = view.values[h][valid].double().cpu()
        p = view.positions[h][valid].cpu()
        n = k.shape[0]
        if m >= n or view.queries is None:
            dev = view.keys.device
            return (k[n - m:].to(dev, view.keys.dtype), v[n - m:].to(dev, view.values.dtype),
                    p[n - m:].to(dev))
        g = view.model.group_size
        q = view.queries[h * g:(h + 1) * g].double().mean(dim=0).cpu()  # (Nq, D)
        qpos = view.query_positions.cpu()
        bounds = torch.linspace(0, n, m + 1).round().long()
        seg = torch.bucketize(torch.arange(n), bounds[1:-1], right=True)  # stretch of each token
        ak = torch.zeros(m, k.shape[1], dtype=torch.float64).index_add_(0, seg, k)
        cnt = torch.bincount(seg, minlength=m).clamp_min(1).double()[:, None]
        ak = ak / cnt
        last = torch.full((m,), -1, dtype=torch.long).scatter_reduce(0, seg, p, "amax")
        qseg = torch.bucketize(qpos, p[bounds[1:-1].clamp(max=n - 1)], right=True).clamp(max=m - 1)
        aq = torch.zeros(m, q.shape[1], dtype=torch.float64).index_add_(0, qseg, q)
        qc = torch.bincount(qseg, minlength=m).double()[:, None]
        aq = torch.where(qc > 0, aq / qc.clamp_min(1), ak)  # a stretch without queries uses its key mean
        s = view.model.scale
        to_anchor = ((aq @ ak.T) * s).masked_fill(last[None, :] > last[:, None], float("-inf")).softmax(-1)
        to_all = ((aq @ k.T) * s).masked_fill(p[None, :] > last[:, None], float("-inf")).softmax(-1)
        solved = torch.linalg.pinv(to_anchor, rtol=self.rcond) @ (to_all @ v)
        lim = self.clip * float(v.norm(dim=-1).max())
        norm = solved.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        solved = torch.where(norm > lim, solved * (lim / norm), solved).nan_to_num(0.0)
        dev = view.keys.device
        return ak.to(dev, view.keys.dtype), solved.to(dev, view.values.dtype), last.to(dev)

    def select(self, view: LayerView) -> Rewrite:
        keys, values, positions = [], [], []
        for h in range(view.n_kv_heads):
            k, v, p = self._head(view, h, max(1, view.budget))
            keys.append(k)
            values.append(v)
            positions.append(p)
        return Rewrite(tuple(keys), tuple(values), tuple(positions))
