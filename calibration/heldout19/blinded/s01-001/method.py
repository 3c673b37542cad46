"""Segment-quota selection (board A).

SnapKV-style question attention decides what to keep, but the budget is first split across 16 equal segments of the
context, each segment's quota proportional to the square root of the attention mass it receives; inside a segment
the best tokens fill its quota. The square root flattens the allocation so that a segment with one strong needle
does not starve the others.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _quotas(mass: torch.Tensor, total: int, caps: torch.Tensor) -> torch.Tensor:
    """Integer quotas proportional to sqrt(mass), never above caps, summing to min(total, caps.sum())."""
    want = mass.clamp_min(0).sqrt()
    want = want / want.sum().clamp_min(1e-12) * total
    q = torch.minimum(want.floor().long(), caps)
    short = min(total, int(caps.sum())) - int(q.sum())
    frac = (want - want.floor()).masked_fill(q >= caps, -1.0)
    while short > 0:
        i = int(frac.argmax())
        if frac[i] < -0.5:
            frac = torch.where(q < caps, torch.zeros_like(frac), frac)
            i = int(frac.argmax())
        q[i] += 1
        short -= 1
        frac[i] = -1.0 if q[i] >= caps[i] else frac[i] - 1.0
    return q


class SegmentQuota(EvictionMethod):
    name = "segment_quota"
    query_window = 16
    question_queries = True
    segments = 16
    recent = 16

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = view.group(view.attention(reduce="mean"), "mean")
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(1)
            n = idx.numel()
            s = score[h, idx]
            b = min(view.budget, n)
            r = min(self.recent, b)
            body = n - r
            seg = torch.div(torch.arange(body, device=s.device) * self.segments, max(body, 1), rounding_mode="floor")
            mass = torch.zeros(self.segments, device=s.device).index_add_(0, seg, s[:body])
            caps = torch.bincount(seg, minlength=self.segments)
            q = _quotas(mass, b - r, caps)
            chosen = [torch.arange(body, n, device=s.device)]
            for j in range(self.segments):
                if int(q[j]) == 0:
                    continue
                members = (seg == j).nonzero().squeeze(1)
                chosen.append(members[s[members].topk(int(q[j])).indices])
            out.append(idx[torch.cat(chosen).sort().values])
        return Keep(tuple(out))
