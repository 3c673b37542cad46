"""Port of DBudgetKV (Ni et al., 2025, "DBudgetKV: Dynamic Budget in KV Cache Compression for Ensuring Optimal
Performance", arXiv 2502.16886) to the harness, board B_online.

This is a port, not a new method. DBudgetKV ranks tokens by attention importance and prunes adaptively: it keeps
adding tokens in order of importance until an attention-based criterion says the retained set reproduces the full
attention closely enough, so an easy input keeps fewer tokens than a hard one. What is ported: per KV head, tokens
ranked by the attention of the context's last 32 rows (query heads of the group averaged), and kept in that order
until the retained columns hold a fraction tau = 0.98 of the Frobenius norm of those rows' attention matrix.

Deviations (stated): the arena imposes a budget, so the dynamic count is capped at it (the method may keep fewer
tokens, never more); the criterion is applied per KV head rather than per layer; on board B the question is unknown
at compression time, so the rows are the context's own closing rows; the window rows themselves are always kept,
as in SnapKV-style methods. The paper's exact norm-difference stopping rule is approximated by the norm-share test.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class DBudgetKVPort(EvictionMethod):
    name = "dbudgetkv_port"
    query_window = 32
    tau = 0.98

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                                          # (H_q, N, T)
        h_kv, t = view.n_kv_heads, view.n_tokens
        a = attn.view(h_kv, -1, t)                                        # group rows stacked
        col_energy = (a ** 2).sum(1)                                      # (H_kv, T): squared column norms
        score = view.group(attn.sum(1), "mean")
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        ok = view.valid_mask()
        score = score.masked_fill(~ok, float("-inf"))
        order = score.argsort(dim=1, descending=True)
        kept_energy = col_energy.gather(1, order).cumsum(1)
        total = col_energy.sum(1, keepdim=True).clamp_min(1e-12)
        need = (kept_energy / total < self.tau).sum(1) + 1                # tokens until the share is reached
        n_window = (view.positions >= view.query_positions.min()).sum(1)
        k = torch.minimum(torch.maximum(need, n_window), torch.full_like(need, view.budget))
        return Keep.from_topk(score, k, view.valid)
