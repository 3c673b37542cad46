"""Component folding (board B_online, query-agnostic prefill; merges entries with ``Rewrite``).

Long contexts repeat themselves: filler sentences, boilerplate, near-identical records. Entries that say the same
thing can share one slot. We find groups of mutually reachable look-alikes and fold each group into one entry, in
two passes, local then global (see DESCRIPTION.md for the similarity used and how members are weighted).

- Pass 1 (local): inside each segment of 128 tokens, entries are linked when their similarity is at least tau;
  the connected components of that graph (min-label propagation with pointer jumping) each fold into one entry.
- Pass 2 (global): the folded entries of all segments are linked and folded the same way.
- tau starts at 0.90 and is lowered by 0.05 (down to 0.30) until the components fit the budget; if they still do
  not fit, the largest components are kept.
- A folded entry sits at the position of its newest member. The closing 32 rows and four opening tokens are kept
  as they are.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


def _components(sim: torch.Tensor, tau: float) -> torch.Tensor:
    """Connected components of the graph sim >= tau: a label (the smallest member index) per node."""
    n = sim.shape[0]
    adj = sim >= tau
    label = torch.arange(n)
    while True:
        cand = torch.where(adj, label[None, :].expand(n, n), n).amin(dim=1)
        new = torch.minimum(label, cand)
        new = new[new]  # pointer jumping
        if torch.equal(new, label):
            return label
        label = new


class ComponentFolding(EvictionMethod):
    name = "component_folding"
    query_window = 32
    segment = 128
    opening = 4

    @staticmethod
    def _fold(k, v, p, label):
        uniq, inv = torch.unique(label, return_inverse=True)
        m = uniq.numel()
        cnt = torch.zeros(m).index_add_(0, inv, torch.ones(label.numel()))
        k2 = torch.zeros(m, k.shape[1]).index_add_(0, inv, k) / cnt[:, None]
        v2 = torch.zeros(m, v.shape[1]).index_add_(0, inv, v) / cnt[:, None]
        p2 = torch.full((m,), -1, dtype=torch.long).scatter_reduce(0, inv, p, reduce="amax")
        return k2, v2, p2, cnt

    def _two_pass(self, k, v, p, tau):
        parts = []
        for lo in range(0, k.shape[0], self.segment):
            ks, vs, ps = k[lo:lo + self.segment], v[lo:lo + self.segment], p[lo:lo + self.segment]
            kn = F.normalize(ks, dim=-1)
            parts.append(self._fold(ks, vs, ps, _components(kn @ kn.T, tau))[:3])
        k1, v1, p1 = (torch.cat(x) for x in zip(*parts))
        kn = F.normalize(k1, dim=-1)
        return self._fold(k1, v1, p1, _components(kn @ kn.T, tau))

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        tail_from = int(view.query_positions.min()) if view.query_positions is not None else int(view.positions.max()) + 1
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            k, v, p = view.keys[h, :n].float(), view.values[h, :n].float(), view.positions[h, :n]
            fixed = (p < self.opening) | (p >= tail_from)
            room = view.budget - int(fixed.sum())
            body = ~fixed
            if room <= 0 or n <= view.budget:
                idx = torch.arange(n)[-view.budget:]
                ks.append(k[idx].to(view.keys.dtype)); vs.append(v[idx].to(view.values.dtype)); ps.append(p[idx].clone())
                continue
            kb, vb, pb = k[body], v[body], p[body]
            tau = 0.90
            while True:
                k2, v2, p2, cnt = self._two_pass(kb, vb, pb, tau)
                if k2.shape[0] <= room or tau <= 0.30 + 1e-9:
                    break
                tau -= 0.05
            if k2.shape[0] > room:
                top = cnt.topk(room).indices
                k2, v2, p2 = k2[top], v2[top], p2[top]
            kk = torch.cat([k[fixed], k2]); vv = torch.cat([v[fixed], v2]); pp = torch.cat([p[fixed], p2])
            order = pp.argsort()
            ks.append(kk[order].to(view.keys.dtype)); vs.append(vv[order].to(view.values.dtype)); ps.append(pp[order])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
