"""Copy-fidelity head shares (board B_offline).

The one-off pass re-reads the context after a "repeat the previous context" instruction, so at every step of it we
know exactly which context token the model is about to reproduce. That makes the pass a clean test of each head:
a head that puts its strongest attention on the very token being reproduced is doing the copying; a head that looks
elsewhere is not. We measure, per query head, the fraction of repeat steps on which its arg-max lands on the token
being reproduced (its copy fidelity), and take the best query head of each KV head. A layer's budget is then shared
among its KV heads: each gets a floor of a quarter of the mean and the rest in proportion to 0.1 + fidelity. Inside
a head, tokens are ranked by the attention they received at the step that reproduced them (the largest over the
query heads of the group). The first 4 tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class CopyFidelityShares(EvictionMethod):
    name = "copy_fidelity_shares"
    reconstruction_queries = True
    floor_share = 0.25
    prior = 0.1
    rows = 256
    n_sink = 4

    def _measure(self, view: LayerView) -> tuple[torch.Tensor, torch.Tensor]:
        q = view.queries
        h_q, n_rep, _ = q.shape
        t = view.n_tokens
        lead = max(0, n_rep - t)                       # steps before the copy starts (the instruction)
        first, last = max(0, lead - 1), min(n_rep - 1, lead - 1 + t)
        hits = torch.zeros(h_q, device=view.keys.device)
        steps = 0
        at_copy = torch.zeros(h_q, t, device=view.keys.device)
        for a in range(first, last, self.rows):
            b = min(last, a + self.rows)
            att = view.attention(q[:, a:b])                                   # (H_q, c, T)
            target = torch.arange(a, b, device=att.device) - lead + 1          # token reproduced at each step
            ok = (target >= 0) & (target < t)
            if not bool(ok.any()):
                continue
            att, target = att[:, ok], target[ok]
            hits += (att.argmax(dim=-1) == target[None, :]).float().sum(dim=1)
            steps += int(target.numel())
            at_copy[:, target] = att.gather(2, target.view(1, -1, 1).expand(h_q, -1, 1))[..., 0]
        fidelity = hits / max(1, steps)
        return view.group(fidelity, "max"), view.group(at_copy, "max")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        fidelity, score = self._measure(view)
        h, t = view.n_kv_heads, view.n_tokens
        total = view.budget * h
        floor = int(self.floor_share * view.budget)
        weight = self.prior + fidelity
        share = (total - floor * h) * weight / weight.sum()
        per_head = (floor + share.floor()).long().clamp(max=t)
        spare = total - int(per_head.sum())
        for i in weight.argsort(descending=True).tolist():
            if spare <= 0:
                break
            add = min(spare, t - int(per_head[i]))
            per_head[i] += add
            spare -= add
        score = score.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(score, per_head, view.valid)
