"""Crate summaries (board C, decode-time cap).

The reasoning trace is packed into crates of consecutive tokens. Each crate carries a two-number-per-channel
summary of its keys: a centre and a half-extent. For any query, centre.q + |q|.half-extent is the most that any
key in the crate can score against it, so a crate can be judged without opening it. When a layer is full, each
crate's ceiling is taken against the newest rows (the largest over the rows and the group's query heads), the
crate holding the newest tokens is always kept, and the rest of the room goes to whole crates in order of their
ceiling; a partially fitting crate keeps its newest tokens.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class CrateSummaries(EvictionMethod):
    name = "crate_summaries"
    query_window = 8
    crate = 16

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        ok = view.valid_mask()
        rows = []
        for h in range(view.n_kv_heads):
            n = int(ok[h].sum())
            k = view.keys[h, :n].float()
            pad = (-n) % self.crate
            hi = torch.cat([k, k[-1:].expand(pad, -1)]).view(-1, self.crate, k.shape[-1]).amax(1)
            lo = torch.cat([k, k[-1:].expand(pad, -1)]).view(-1, self.crate, k.shape[-1]).amin(1)
            centre, half = (hi + lo) / 2, (hi - lo) / 2
            q = view.queries[h * g:(h + 1) * g].float().reshape(-1, k.shape[-1])
            ceiling = (q @ centre.T + q.abs() @ half.T).amax(0)                     # (crates,)
            ceiling[-1] = float("inf")
            crate_of = torch.arange(n, device=k.device) // self.crate
            s = torch.full((view.n_tokens,), float("-inf"), device=k.device)
            s[:n] = ceiling[crate_of] + 1e-6 * torch.arange(n, device=k.device) / n
            rows.append(s)
        return Keep.from_topk(torch.stack(rows), view.budget, view.valid)
