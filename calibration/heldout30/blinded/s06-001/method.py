"""LServe's hierarchical page selection (Yang et al., 2025, "LServe: Efficient Long-sequence LLM Serving with
Unified Sparse Attention", arXiv 2502.14866), ported to board C's hard per-layer cap.

What is ported. LServe splits heads into streaming heads (attention sinks + a local window) and dense heads, and
for dense heads selects KV pages query-aware with a two-level ("hierarchical") paging: small physical pages carry
per-channel key maxima and minima; the upper bound of q.k over a page is sum_d max(q_d max_d, q_d min_d), as in
Quest; consecutive physical pages form a logical page whose score is the largest of its physical pages', and
selection works on logical pages. Here the selection happens whenever a layer reaches its cap: the newest 16
queries score the pages (the largest bound over those queries and over the KV head's query heads), and a dense
head keeps its first 4 tokens, its newest 16 and then whole logical pages (4 pages of 8 tokens) by score, then
single physical pages, then the most recent of the rest, up to its share of the cap. A streaming head keeps its
first 4 tokens and its most recent ones.

Deviations. LServe's streaming/dense split is static, from DuoAttention's offline-trained gates; no gate is
available here, so a KV head is treated as streaming when the newest queries already put at least 85 % of their
attention on its sinks and its newest 64 tokens (decided at every eviction). LServe never drops a page (it
selects per step over a full cache); under a hard cap the pages not selected are evicted for good. The page
selector is recomputed at every eviction instead of being reused across a fixed number of decode steps.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class LServePages(EvictionMethod):
    name = "lserve_pages"
    query_window = 16
    n_sink = 4
    local = 16
    local_probe = 64
    page = 8
    pages_per_logical = 4
    streaming_mass = 0.85

    def _is_streaming(self, view: LayerView, attn: torch.Tensor) -> torch.Tensor:
        g = view.model.group_size
        valid = view.valid_mask()
        lengths = valid.sum(dim=1)
        mask = torch.zeros_like(valid)
        for h in range(view.n_kv_heads):
            n = int(lengths[h])
            mask[h, : min(self.n_sink, n)] = True
            mask[h, max(0, n - self.local_probe): n] = True
        mass = (attn * mask.repeat_interleave(g, dim=0)[:, None, :]).sum(dim=-1).mean(dim=1)   # (H_q,)
        return view.group(mass, "mean") >= self.streaming_mass

    def _dense(self, keys: torch.Tensor, queries: torch.Tensor, n: int, size: int) -> torch.Tensor:
        """Indices (into 0..n-1) a dense head keeps: sinks, newest, logical pages, physical pages, recency."""
        dev = keys.device
        chosen = torch.zeros(n, dtype=torch.bool, device=dev)
        chosen[: min(self.n_sink, size)] = True
        room = size - int(chosen.sum())
        newest = min(self.local, room)
        if newest:
            chosen[n - newest:] = True
        lo, hi = min(self.n_sink, n), n - self.local
        if hi - lo >= self.page and int(chosen.sum()) < size:
            p = self.page
            n_pages = (hi - lo) // p
            body = keys[lo: lo + n_pages * p].float().view(n_pages, p, -1)
            top, bottom = body.amax(dim=1), body.amin(dim=1)            # (P, D)
            q = queries.float()                                          # (g, N, D)
            bound = torch.maximum(q[:, :, None, :] * top, q[:, :, None, :] * bottom).sum(dim=-1)  # (g, N, P)
            phys = bound.amax(dim=(0, 1))                                # (P,)
            m = self.pages_per_logical
            n_log = -(-n_pages // m)
            padded = torch.full((n_log * m,), float("-inf"), device=dev)
            padded[:n_pages] = phys
            logical = padded.view(n_log, m).amax(dim=1)
            for lg in logical.argsort(descending=True).tolist():
                first, last = lg * m, min(n_pages, lg * m + m)
                need = (last - first) * p
                if size - int(chosen.sum()) < need:
                    continue
                chosen[lo + first * p: lo + last * p] = True
            for pg in phys.argsort(descending=True).tolist():
                span = slice(lo + pg * p, lo + pg * p + p)
                if bool(chosen[span].all()):
                    continue
                if size - int(chosen.sum()) < p:
                    break
                chosen[span] = True
        room = size - int(chosen.sum())
        if room > 0:
            rest = torch.nonzero(~chosen).flatten()
            chosen[rest[-room:]] = True
        return torch.nonzero(chosen).flatten()

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        valid = view.valid_mask()
        attn = view.attention()
        streaming = self._is_streaming(view, attn)
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            n = idx.numel()
            size = min(view.budget, n)
            if size >= n:
                out.append(idx)
                continue
            if bool(streaming[h]):
                head = min(self.n_sink, size)
                local = torch.arange(n - (size - head), n, device=idx.device)
                out.append(idx[torch.cat([torch.arange(head, device=idx.device), local])])
                continue
            kept = self._dense(view.keys[h, idx], view.queries[h * g: (h + 1) * g], n, size)
            out.append(idx[kept])
        return Keep(tuple(out))
