"""Outlier Chorus: query-agnostic compression from two votes, how unusual a key is and how much its own
neighbourhood reads it.

Vote 1, outlierness: each token's leverage in its head's key matrix, k_i^T (K^T K)^-1 k_i, with the keys first
turned back to position 0 (the layer's rotary phase undone, so position does not pass for outlierness),
estimated through a random Gaussian row sketch of K (a QR of the sketch whitens the keys). Vote 2, local reading: the context is cut
into blocks of 128 tokens, and inside each block every query attends to every key of the block in both
directions; a key's vote is the attention it receives there. Both votes are turned into ranks in [0, 1] and
averaged; the last 16 tokens are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class OutlierChorus(EvictionMethod):
    name = "outlier_chorus"
    query_window = 1 << 20       # every prompt query: the block-local reading needs them all
    block = 128
    sketch_rows = 4              # sketch height as a multiple of head_dim
    tail = 16

    def _leverage(self, view: LayerView, gen: torch.Generator) -> torch.Tensor:
        hkv, t, d = view.keys.shape
        valid = view.valid_mask()
        out = torch.zeros(hkv, t, device=view.keys.device)
        for h in range(hkv):
            rows = view.keys[h].float() * valid[h, :, None]        # position-free key rows
            m = min(t, self.sketch_rows * d)
            if m < d:                                             # too few rows to sketch: exact leverage
                out[h] = ((rows @ torch.linalg.pinv(rows.T @ rows)) * rows).sum(-1)
                continue
            sk = torch.randn(m, t, generator=gen).to(rows.device) @ rows / m ** 0.5
            _, r = torch.linalg.qr(sk)
            r = r + 1e-4 * torch.eye(d, device=r.device) * r.diagonal().abs().mean().clamp_min(1e-6)
            white = torch.linalg.solve_triangular(r, rows.T, upper=True).T
            out[h] = (white * white).sum(-1)
        return out

    def _local(self, view: LayerView) -> torch.Tensor:
        hkv, t, d = view.keys.shape
        q = view.queries
        qpos = view.query_positions
        g = view.model.group_size
        out = torch.zeros(hkv, t, device=view.keys.device)
        for s in range(0, t, self.block):
            lo, hi = s, min(t, s + self.block)
            pos_lo, pos_hi = view.positions[:, lo], view.positions[:, hi - 1]
            sel = (qpos >= int(pos_lo.min())) & (qpos <= int(pos_hi.max()))
            if not bool(sel.any()):
                continue
            qc = q[:, sel].float().reshape(hkv, g, -1, d)
            kc = view.keys[:, lo:hi].float()
            lg = torch.einsum("hgnd,htd->hgnt", qc, kc) * view.model.scale
            out[:, lo:hi] = lg.softmax(-1).sum(dim=(1, 2))
        return out

    @staticmethod
    def _rank(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        x = x.masked_fill(~valid, float("-inf"))
        r = x.argsort(dim=-1).argsort(dim=-1).float()
        return r / max(1, x.shape[-1] - 1)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        gen = torch.Generator().manual_seed(1009 + view.layer)
        valid = view.valid_mask()
        lev = self._leverage(view, gen)
        votes = self._rank(lev, valid)
        if view.queries is not None and view.query_positions is not None:
            votes = 0.5 * votes + 0.5 * self._rank(self._local(view), valid)
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            votes[h, max(0, n - self.tail):n] = float("inf")
        return Keep.from_topk(votes, view.budget, view.valid)
