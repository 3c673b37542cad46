"""Echo-weighted head shares (board B_offline, with the reconstruction pass).

Heads are not equally useful for getting a context back. When the model repeats the context (the harness's
reconstruction pass), a head that can copy puts its strongest attention on exactly the context token the
model is about to write out. Echo-weighted head shares measure that per head, and give heads that copy a
larger part of the layer's budget:

1. copy skill of a query head: over the repeat rows, the share of rows whose most-attended token is the next
   token to be reproduced, averaged with the mean attention those rows put on it; a KV head takes the mean over
   its query heads;
2. shares: every KV head keeps half of the even share; the other half of the layer's budget is split in
   proportion to copy skill;
3. inside a head: tokens ranked by the attention the whole repeat pass pays them (summed over rows, mean over
   the query heads), max-pooled over 7 positions.

Without a reconstruction pass (other boards) it keeps the newest tokens.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class EchoWeightedShares(EvictionMethod):
    name = "echo_weighted_shares"
    reconstruction_queries = True
    rows_per_pass = 256
    even_part = 0.5
    kernel = 7

    def _read(self, view: LayerView) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(hits, on_target, received): per query head the copy hits and the attention on the copy target
        (both summed over rows), and per query head and token the attention received."""
        q = view.queries
        h_q, n_rows, _ = q.shape
        t = view.n_tokens
        lead = n_rows - t                                  # rows before the repeated context: the instruction
        hits = torch.zeros(h_q, device=view.keys.device)
        on_target = torch.zeros(h_q, device=view.keys.device)
        received = torch.zeros(h_q, t, device=view.keys.device)
        counted = 0
        for start in range(0, n_rows, self.rows_per_pass):
            stop = min(n_rows, start + self.rows_per_pass)
            a = view.attention(q[:, start:stop])            # (H_q, c, T): every row comes after the context
            received += a.sum(dim=1)
            row = torch.arange(start, stop, device=a.device)
            target = row - lead + 1                          # the row reads token row - lead; it writes the next
            ok = (target >= 1) & (target < t)
            if bool(ok.any()):
                tgt = target[ok]
                sub = a[:, ok]                               # (H_q, c', T)
                hits += (sub.argmax(dim=-1) == tgt.view(1, -1)).float().sum(dim=1)
                on_target += sub.gather(-1, tgt.view(1, -1, 1).expand(h_q, -1, 1)).squeeze(-1).sum(dim=1)
                counted += int(ok.sum())
        counted = max(1, counted)
        return hits / counted, on_target / counted, received

    def _shares(self, skill: torch.Tensor, budget: int, lengths: list[int]) -> list[int]:
        h = skill.numel()
        base = int(budget * self.even_part)
        pool = budget * h - base * h
        weight = skill.clamp_min(0) + 1e-6
        extra = (pool * weight / weight.sum()).floor().long().tolist()
        shares = [min(lengths[i], base + extra[i]) for i in range(h)]
        left = budget * h - sum(shares)
        for i in skill.argsort(descending=True).tolist() * 2:        # leftovers to the best copiers
            room = lengths[i] - shares[i]
            if left <= 0:
                break
            if room > 0:
                give = min(room, left)
                shares[i] += give
                left -= give
        return shares

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is None or view.budget >= view.n_tokens or view.queries.shape[1] <= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        hit_rate, target_mass, received = self._read(view)
        skill = view.group(0.5 * hit_rate + 0.5 * target_mass, "mean")             # (H_kv,)
        score = view.group(received, "mean")
        score = F.max_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        lengths = valid.sum(dim=1).tolist()
        shares = torch.tensor(self._shares(skill, view.budget, lengths), device=score.device)
        return Keep.from_topk(score, shares, view.valid)
