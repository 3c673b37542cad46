"""Hierarchical page selection after LServe (board A), a credited port.

Source: LServe (Yang et al., "LServe: Efficient Long-sequence LLM Serving with Unified Sparse Attention", MLSys
2025, arXiv 2502.14866), whose dynamic sparse attention selects KV pages hierarchically: each physical page (64
tokens here) is split into logical pages (16 tokens); a logical page is summarised by the channel-wise min and max of
its keys, its importance for a query is Quest's upper bound sum_c max(q_c * min_c, q_c * max_c) (Quest, Tang et al.,
ICML 2024, arXiv 2406.10774), and a physical page's importance is the max over its logical pages.

Deviations, because the arena evicts once after the prefill instead of selecting pages at every decoding step:
- the queries are the question span plus the last 16 prompt positions (board A), and a page's importance is the max
  over those queries (causal: a query only scores pages that start before it) and over the KV head's query heads;
- the selection is permanent (an eviction), not redone per token;
- LServe's static streaming heads are not ported (every head uses page selection);
- the first 4 tokens and the last 64 prompt tokens are always kept (LServe's sink and local pages); the last selected
  physical page may be cut at a logical-page boundary, best logical pages first, to meet the budget exactly.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class LServePages(EvictionMethod):
    name = "lserve_pages"
    query_window = 16
    question_queries = True
    logical = 16
    physical = 64
    n_sink = 4
    n_local = 64

    def logical_importance(self, view: LayerView) -> torch.Tensor:
        """(H_kv, P) importance of every logical page."""
        h_kv, t, d = view.keys.shape
        g = view.model.group_size
        n_pages = (t + self.logical - 1) // self.logical
        pad = n_pages * self.logical - t
        keys = torch.nn.functional.pad(view.keys.float(), (0, 0, 0, pad))
        real = torch.nn.functional.pad(view.valid_mask(), (0, pad), value=False)
        pages = keys.reshape(h_kv, n_pages, self.logical, d)
        mask = real.reshape(h_kv, n_pages, self.logical, 1)
        kmin = pages.masked_fill(~mask, float("inf")).amin(dim=2)
        kmax = pages.masked_fill(~mask, float("-inf")).amax(dim=2)
        empty = ~mask.any(dim=2).squeeze(-1)
        kmin, kmax = kmin.masked_fill(empty[..., None], 0.0), kmax.masked_fill(empty[..., None], 0.0)
        q = view.queries.float().reshape(h_kv, g * view.queries.shape[1], d)
        bound = torch.maximum(torch.einsum("hnd,hpd->hnpd", q, kmin), torch.einsum("hnd,hpd->hnpd", q, kmax)).sum(-1)
        first_pos = torch.nn.functional.pad(view.positions, (0, pad), value=1 << 30)
        first_pos = first_pos.reshape(h_kv, n_pages, self.logical)[:, :, 0]
        qpos = view.query_positions.repeat(g)
        bound = bound.masked_fill(first_pos[:, None, :] > qpos[None, :, None], float("-inf"))
        return bound.amax(dim=1).masked_fill(empty, float("-inf"))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        t = view.n_tokens
        lp = self.logical_importance(view)                                     # (H_kv, P)
        per_phys = self.physical // self.logical
        n_phys = (lp.shape[1] + per_phys - 1) // per_phys
        padded = torch.nn.functional.pad(lp, (0, n_phys * per_phys - lp.shape[1]), value=float("-inf"))
        phys = padded.reshape(lp.shape[0], n_phys, per_phys).amax(dim=-1)      # (H_kv, n_phys)
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            real = torch.nonzero(valid[h]).flatten()
            n = real.numel()
            b = min(view.budget, n)
            fixed = torch.cat([real[: min(self.n_sink, b)], real[max(0, n - min(self.n_local, b)):]]).unique()
            chosen = [fixed[: b]]
            have = set(fixed[:b].tolist())
            room = b - len(have)
            for pp in phys[h].argsort(descending=True).tolist():
                if room <= 0 or phys[h, pp] == float("-inf"):
                    break
                logicals = range(pp * per_phys, min((pp + 1) * per_phys, lp.shape[1]))
                for lg in sorted(logicals, key=lambda i: -float(lp[h, i])):
                    span = [i for i in range(lg * self.logical, min(t, (lg + 1) * self.logical))
                            if i not in have and bool(valid[h, i])]
                    span = span[:room]
                    have.update(span)
                    room -= len(span)
                    if span:
                        chosen.append(torch.tensor(span, dtype=torch.long, device=view.keys.device))
                    if room <= 0:
                        break
            out.append(torch.cat(chosen).unique().sort().values)
        return Keep(tuple(out))
