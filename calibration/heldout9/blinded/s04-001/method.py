"""Output-aware reconstruction saliency (board B_offline).

KVzip (Kim et al., 2025, arXiv 2505.23416) lets the model re-read its context and keeps the pairs the re-reading
attends to. Raw attention is a poor proxy for what a pair contributes, though: a repeat query with a large norm
spreads sharp attention everywhere, and a pair with a tiny value moves the output little however much attention it
gets. We therefore rate every pair by what it can write into the residual stream: each repeat query's attention row
is divided by that query's norm, multiplied by the pair's value norm, the maximum is taken over the repeat queries
and over the query heads that share the KV head, and the log of it ranks the pairs. The most recent 64 context
tokens are always kept (the continuation attends to them whatever comes next).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class OutputAwareSaliency(EvictionMethod):
    name = "output_aware_saliency"
    reconstruction_queries = True
    recent = 64
    rows = 256

    def _saliency(self, view: LayerView) -> torch.Tensor:
        q = view.queries
        h_kv, t = view.n_kv_heads, view.n_tokens
        g = view.model.group_size
        best = torch.zeros(q.shape[0], t, device=view.keys.device)
        for a in range(0, q.shape[1], self.rows):
            qc = q[:, a:a + self.rows]
            att = view.attention(qc)                                        # (H_q, c, T), the repeat reads it all
            inv = 1.0 / qc.float().norm(dim=-1).clamp_min(1e-6)             # (H_q, c)
            best = torch.maximum(best, (att * inv[..., None]).amax(dim=1))
        vnorm = view.values.float().norm(dim=-1)                            # (H_kv, T)
        per_kv = best.view(h_kv, g, t).amax(dim=1) * vnorm
        return per_kv.clamp_min(1e-30).log()

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._saliency(view)
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, max(0, n - self.recent):n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
