"""Support-aware reconstruction scores (board B_offline, reconstruction pass).

Builds on KVzip (Kim et al., 2025, arXiv 2505.23416): score each context token by the attention it receives
while the model repeats the context, and keep the best. KVzip keeps a token's peak attention over the repeat
rows. Most of those peaks are copy peaks: the row that is about to emit token i looks at token i itself. Rows
also spend attention on the tokens that let them find i (the previous words, the record's name, a
delimiter), and those supporting tokens are exactly what a later question needs to reach i. Here each repeat
row's copy target (its argmax and the token on either side) is set aside, and the row's remaining attention is
renormalised; a token's score is its KVzip peak plus its peak supporting share. The last 16 context tokens are
kept.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class SupportAwareReconstruction(EvictionMethod):
    name = "support_aware_reconstruction"
    reconstruction_queries = True
    chunk = 128
    support_weight = 1.0
    closing = 16

    def _scores(self, view: LayerView) -> torch.Tensor:
        h_q = view.queries.shape[0]
        t = view.n_tokens
        copy_peak = torch.zeros(h_q, t, device=view.keys.device)
        support_peak = torch.zeros(h_q, t, device=view.keys.device)
        for s in range(0, view.queries.shape[1], self.chunk):
            att = view.attention(view.queries[:, s:s + self.chunk])            # (H_q, c, T)
            copy_peak = torch.maximum(copy_peak, att.amax(1))
            target = att.argmax(-1, keepdim=True)                               # (H_q, c, 1)
            near = torch.cat([target - 1, target, target + 1], dim=-1).clamp(0, t - 1)
            rest = att.scatter(-1, near, 0.0)
            rest = rest / rest.sum(-1, keepdim=True).clamp_min(1e-9)
            support_peak = torch.maximum(support_peak, rest.amax(1))
        return view.group(copy_peak + self.support_weight * support_peak, "max")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._scores(view)
        top = view.positions.max(dim=-1, keepdim=True).values
        score = score.masked_fill(view.positions > top - self.closing, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
