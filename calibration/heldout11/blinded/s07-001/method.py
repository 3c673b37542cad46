"""Tiered acceptance cache for decode-time eviction (board C).

A cap of N tokens is split into ``tiers`` equal tiers (after four opening tokens). Tier 0 holds the newest tokens
verbatim. Tier i holds the history just older than tier i-1, at a coarser grain: it covers a span 2^i times its
size, cut into runs of 2^i consecutive tokens, and each run is represented by its single most useful token. The
cache therefore reaches back exponentially far in the past at a fixed size, with resolution falling off with age.

"Most useful" is a smoothed attention record: every query row since the previous eviction updates each token's
record as an exponential moving average (``decay`` per row) of the attention it received (mean over the KV head's
query heads).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class TieredAcceptance(EvictionMethod):
    name = "tiered_acceptance"
    query_window = 512  # every row since the previous eviction (a block is at most 512 rows)
    tiers = 4
    opening = 4
    decay = 0.9

    def _record(self, view: LayerView) -> torch.Tensor:
        prev = view.recall("ema", fill=0.0)
        seen = view.state.get("seen", -1)
        qpos = view.query_positions
        new = qpos > seen
        if not bool(new.any()):
            return prev
        a = view.attention()[:, new]  # (H_q, n, T), causal
        a = view.group(a, "mean")  # (H_kv, n, T)
        n = a.shape[1]
        w = (1 - self.decay) * self.decay ** torch.arange(n - 1, -1, -1, device=a.device, dtype=a.dtype)
        view.state["seen"] = int(qpos.max())
        return prev * self.decay**n + torch.einsum("n,hnt->ht", w, a)

    def _tiered(self, order: torch.Tensor, ema: torch.Tensor, budget: int) -> torch.Tensor:
        """order: real indices of one head, newest first."""
        n = order.numel()
        opening = order.flip(0)[: min(self.opening, budget)]
        rest = order[: n - opening.numel()]
        room = budget - opening.numel()
        slot = room // self.tiers
        picks = [rest[: slot + room % self.tiers]]
        cursor = picks[0].numel()
        for tier in range(1, self.tiers):
            run = 2**tier
            for _ in range(slot):
                seg = rest[cursor: cursor + run]
                if seg.numel() == 0:
                    break
                picks.append(seg[ema[seg].argmax()].view(1))
                cursor += seg.numel()
        chosen = torch.cat([opening, *picks])
        short = budget - chosen.numel()
        if short > 0:
            spare = rest[~torch.isin(rest, chosen)]
            chosen = torch.cat([chosen, spare[ema[spare].topk(min(short, spare.numel())).indices]])
        return chosen.sort().values

    def select(self, view: LayerView) -> Keep:
        b = view.budget
        valid = view.valid_mask()
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        ema = self._record(view)
        view.remember("ema", ema)
        out = []
        for h in range(view.n_kv_heads):
            real = valid[h].nonzero().flatten()
            if real.numel() <= b:
                out.append(real)
                continue
            order = real[torch.argsort(view.positions[h, real], descending=True)]
            out.append(self._tiered(order, ema[h], b))
        return Keep(tuple(out))
