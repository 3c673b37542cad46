"""Look-ahead contrast (board B_online, attention-free): judge each stretch of the context against the stretch
that follows it. Entries that stand out from their successor's range carry information the successor does not."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _stand_out(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """x (n, D) scaled channel-wise into ref's range; the spread across channels of each scaled row."""
    lo = ref.amin(dim=0, keepdim=True)
    hi = ref.amax(dim=0, keepdim=True)
    z = (x - lo) / (hi - lo + 1e-6)
    return z.std(dim=-1)


class LookaheadContrast(EvictionMethod):
    name = "lookahead_contrast"
    head_keep = 4       # opening entries
    stretch = 64

    def _one_head(self, k: torch.Tensor, v: torch.Tensor, budget: int) -> torch.Tensor:
        n = k.shape[0]
        if budget >= n:
            return torch.arange(n, device=k.device)
        s = min(self.head_keep, budget)
        lag = self.stretch
        while lag > 1 and s + 2 * lag > n:
            lag //= 2
        body_end = s + ((n - s) // lag - 1) * lag if n - s >= 2 * lag else s
        tail_start = body_end
        tail_len = n - tail_start
        keep = [torch.arange(s, device=k.device)]
        room = budget - s
        if room <= tail_len or body_end <= s:
            keep.append(torch.arange(n - room, n, device=k.device) if room > 0 else
                        torch.zeros(0, dtype=torch.long, device=k.device))
            return torch.cat(keep)
        keep.append(torch.arange(tail_start, n, device=k.device))
        room -= tail_len
        parts = list(range(s, body_end, lag))
        base, extra = divmod(room, len(parts))
        for j, a in enumerate(parts):
            b = a + lag
            quota = base + (1 if j >= len(parts) - extra else 0)   # later stretches take the remainder
            quota = min(quota, lag)
            if quota <= 0:
                continue
            nxt = slice(b, min(n, b + lag))
            sk = torch.softmax(_stand_out(k[a:b], k[nxt]), dim=0)
            sv = torch.softmax(_stand_out(v[a:b], v[nxt]), dim=0)
            keep.append(torch.topk(sk + sv, quota).indices + a)
        return torch.cat(keep).sort().values

    def select(self, view: LayerView) -> Keep:
        live = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            n = int(live[h].sum())
            out.append(self._one_head(view.keys[h, :n].float(), view.values[h, :n].float(), view.budget))
        return Keep(tuple(out))
