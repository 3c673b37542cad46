"""LServe's sparse attention (Yang et al., 2025, arXiv 2502.14866), ported to question-aware prefill eviction
on board A.

LServe serves long sequences with two kinds of head: static "streaming" heads that attend only to the first
tokens and a local window, and dynamic heads that pick pages of the KV cache with a hierarchical, query-aware
page selector (per-page channel-wise key minima and maxima give an upper bound of q.k for small logical pages;
a physical page is scored by its best logical page) and reuse the choice over several decoding steps.

This is a port, not the paper's system, and it differs in what the harness allows:
- LServe's streaming heads come from an offline, optimised gate per head (DuoAttention); here a KV head is
  treated as streaming when its query heads give at least `local_share` of their question attention to the
  first `sinks` and last `local` tokens, measured on the view itself.
- The selector runs once, with the question's queries, to decide what the layer keeps; nothing is paged in
  later, and nothing is reused across steps because there are none on board A.
- Page sizes (logical 8, physical 32) and the local window are the porter's choice for 512-4K-token contexts."""

import torch

from harness import EvictionMethod, Keep, LayerView


class LServePort(EvictionMethod):
    name = "lserve_port"
    query_window = 16
    question_queries = True
    sinks = 4
    local = 64
    local_share = 0.6
    logical = 8
    physical = 32

    def _page_bounds(self, view: LayerView) -> torch.Tensor:
        """(H_kv, T): the physical page's score for every token (best logical-page upper bound of q.k)."""
        keys = view.keys.float()
        h_kv, t, d = keys.shape
        lp = self.logical
        extra = (-t) % lp
        if view.valid is not None:
            big = torch.finfo(torch.float32).max
            kmin_src = keys.masked_fill(~view.valid[..., None], big)
            kmax_src = keys.masked_fill(~view.valid[..., None], -big)
        else:
            kmin_src = kmax_src = keys
        if extra:
            kmin_src = torch.cat([kmin_src, kmin_src[:, -1:].expand(h_kv, extra, d)], dim=1)
            kmax_src = torch.cat([kmax_src, kmax_src[:, -1:].expand(h_kv, extra, d)], dim=1)
        kmin = kmin_src.reshape(h_kv, -1, lp, d).amin(dim=2)               # (H_kv, P, D)
        kmax = kmax_src.reshape(h_kv, -1, lp, d).amax(dim=2)
        q = view.queries.float()                                           # (H_q, N, D)
        g = view.model.group_size
        qg = q.reshape(h_kv, g * q.shape[1], d)                            # every query of the group
        bound = torch.maximum(qg[:, :, None, :] * kmin[:, None], qg[:, :, None, :] * kmax[:, None]).sum(-1)
        logical = bound.amax(dim=1)                                        # (H_kv, P): over the group's queries
        per_phys = self.physical // lp
        extra_p = (-logical.shape[1]) % per_phys
        if extra_p:
            logical = torch.cat([logical, logical.new_full((h_kv, extra_p), float("-inf"))], dim=1)
        phys = logical.reshape(h_kv, -1, per_phys).amax(dim=2)             # (H_kv, P / per_phys)
        return phys.repeat_interleave(self.physical, dim=1)[:, :t]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        mass = view.group(view.attention(reduce="mean"), "mean")           # (H_kv, T)
        score = self._page_bounds(view) - view.positions.float() * 1e-6
        recency = view.positions.float()
        first_q = view.query_positions.min().to(view.positions.device)
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            edge = torch.zeros(view.n_tokens, dtype=torch.bool, device=score.device)
            edge[: self.sinks] = True
            edge[max(0, c - self.local): c] = True
            if float(mass[h][edge].sum()) >= self.local_share:              # a streaming head
                score[h] = recency[h]
            score[h, : self.sinks] = float("inf")
        score = score.masked_fill(view.positions >= first_q, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
