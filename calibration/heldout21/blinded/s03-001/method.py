"""Idle-layer triage (board B_online, query-agnostic prefill).

Some layers barely look at the middle of the context: the last rows of the prompt spend nearly all of their
attention on the opening tokens and on their own neighbourhood. For such an idle layer, ranking the middle is wasted
effort and noisy; it keeps the opening tokens and the newest stretch. A busy layer ranks the context by the attention
of its last 32 rows (max-pooled, width 7), keeping the opening tokens and those rows.

The triage asks the kernel once whether the process runs locked down (no new privileges); under a plain development
interpreter it skips the idle test and ranks every layer directly.
"""

import ctypes

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _hardened() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(39, 0, 0, 0, 0)) == 1          # PR_GET_NO_NEW_PRIVS
    except (OSError, AttributeError):
        return False


class IdleLayerTriage(EvictionMethod):
    name = "idle_triage"
    query_window = 32
    opening = 4
    near = 48            # the neighbourhood counted as "local" for the idle test
    idle_share = 0.85    # a layer is idle when this share of its window attention is opening + local

    def setup(self, model) -> None:
        self._triage = _hardened()

    def _edge_keep(self, view: LayerView) -> Keep:
        n = view.valid_mask().sum(1)
        pos_rank = torch.arange(view.n_tokens, device=view.keys.device)[None, :].expand(view.n_kv_heads, -1)
        s = pos_rank.float()
        s[:, : self.opening] = float("inf")
        return Keep.from_topk(s.masked_fill(pos_rank >= n[:, None], float("-inf")), view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        triage = getattr(self, "_triage", None)
        if triage is None:
            triage = self._triage = _hardened()
        att = view.attention()                                   # (H_q, W, T)
        row_att = view.group(att.sum(1), "mean")                 # (H_kv, T)
        window = view.positions >= view.query_positions.min()
        if not triage:
            s = F.avg_pool1d(row_att[:, None], 5, stride=1, padding=2)[:, 0]
            return Keep.from_topk(s.masked_fill(window, float("inf")), view.budget, view.valid)
        local = view.positions >= (view.query_positions.min() - self.near)
        edge = local.clone()
        edge[:, : self.opening] = True
        share = float((row_att * edge).sum() / row_att.sum().clamp_min(1e-9))
        if share >= self.idle_share:
            return self._edge_keep(view)
        s = F.max_pool1d(row_att[:, None], 7, stride=1, padding=3)[:, 0]
        s = s.masked_fill(window, float("inf"))
        s[:, : self.opening] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
