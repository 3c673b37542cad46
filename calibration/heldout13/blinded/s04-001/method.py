"""Question-tilted spread selection (board A).

Keeping the tokens the question attends to most tends to keep many copies of the same thing: neighbouring
tokens of one matched sentence have near-identical keys. We select a set that is both relevant to the question
and spread out in key space, by maximising the volume spanned by the kept keys after each key has been scaled by
its relevance to the question.

Relevance rel_i: cosine between token i's key and the question rows (question span + closing 8 rows), averaged
over rows and over the KV head's query heads, rescaled to [0, 1]. Affinity A_ij = rel_i * cos(k_i, k_j) * rel_j.
Selection: greedy log-volume growth: each step adds the token whose key, scaled by its relevance, has the
largest residual after projection on the span of those already chosen (an incremental Cholesky update of A).
Once the volume cannot grow any more (keys span at most head_dim directions), the rest is filled by relevance.

The closing 16 prompt tokens and four opening tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-6)


class TiltedSpread(EvictionMethod):
    name = "tilted_spread"
    query_window = 8
    question_queries = True
    opening = 4
    closing = 16
    min_pool = 64

    def _relevance(self, view: LayerView) -> torch.Tensor:
        q = _unit(view.queries.float())  # (H_q, N, D)
        k = _unit(view.keys.float())  # (H_kv, T, D)
        g = view.model.group_size
        q = q.reshape(view.n_kv_heads, g * q.shape[1], q.shape[2])
        rel = torch.einsum("hnd,htd->ht", q, k) / q.shape[1]
        lo = rel.min(dim=1, keepdim=True).values
        hi = rel.max(dim=1, keepdim=True).values
        return (rel - lo) / (hi - lo).clamp_min(1e-6)

    @staticmethod
    def _greedy(kn: torch.Tensor, rel: torch.Tensor, forced: torch.Tensor, k: int) -> torch.Tensor:
        n = kn.shape[0]
        gain = rel * rel  # diagonal of A: cos(k_i, k_i) = 1
        basis = torch.zeros(k, n, dtype=kn.dtype, device=kn.device)
        chosen: list[int] = []
        order = list(forced.nonzero().flatten().tolist())
        for step in range(min(k, n)):
            if order:
                j = order.pop(0)
            else:
                masked = gain.clone()
                if chosen:
                    masked[torch.tensor(chosen, device=kn.device)] = -1.0
                j = int(masked.argmax())
                if float(masked[j]) <= 1e-10:
                    break
            row = rel[j] * (kn @ kn[j]) * rel  # A[j, :]
            resid = (row - basis[:step, j] @ basis[:step]) / gain[j].clamp_min(1e-10).sqrt()
            basis[step] = resid
            gain = (gain - resid * resid).clamp_min(0.0)
            chosen.append(j)
        return torch.tensor(sorted(chosen), dtype=torch.long, device=kn.device)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.queries is None or view.budget < self.min_pool:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rel = self._relevance(view) + 1e-3
        valid = view.valid_mask()
        top = view.positions.max()
        fixed = (view.positions > top - self.closing) | (view.positions < self.opening)
        out = []
        for h in range(view.n_kv_heads):
            real = valid[h].nonzero().flatten()
            kn = _unit(view.keys[h, real].float())
            picked = self._greedy(kn, rel[h, real], fixed[h, real], view.budget)
            short = view.budget - picked.numel()
            if short > 0:  # volume exhausted (at most head_dim directions): fill by relevance
                r = rel[h, real].clone()
                r[picked] = -1.0
                picked = torch.cat([picked, r.topk(min(short, int((r >= 0).sum()))).indices]).sort().values
            out.append(real[picked])
        return Keep(tuple(out))
