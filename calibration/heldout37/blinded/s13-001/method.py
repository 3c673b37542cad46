"""Codebook Glance: offline compression that scores the context with the reconstruction pass's queries against
a coarse, per-head codebook summary of the keys instead of the keys themselves."""

import torch

from harness import EvictionMethod, Keep, LayerView


class CodebookGlance(EvictionMethod):
    name = "codebook_glance"
    reconstruction_queries = True
    parts = 8                   # each key is cut into this many equal slices
    words = 16                  # codewords per slice
    rounds = 6                  # refinement rounds of the codewords
    rows = 128
    initial = 4
    local = 16

    def _codebooks(self, keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """keys (T, D) -> codewords (P, W, D/P) and the codeword of each slice of each key (P, T)."""
        t, d = keys.shape
        sl = keys.reshape(t, self.parts, d // self.parts).transpose(0, 1)    # (P, T, d/P)
        w = min(self.words, t)
        seeds = torch.linspace(0, t - 1, w).round().long()
        book = sl[:, seeds].clone()                                          # (P, W, d/P)
        for _ in range(self.rounds):
            code = torch.cdist(sl, book).argmin(dim=-1)                     # (P, T)
            tally = torch.zeros(self.parts, w).scatter_add_(1, code, torch.ones_like(code, dtype=torch.float32))
            summed = torch.zeros_like(book).scatter_add_(1, code[..., None].expand_as(sl), sl)
            fresh = summed / tally.clamp_min(1.0)[..., None]
            book = torch.where(tally[..., None] > 0, fresh, book)
        code = torch.cdist(sl, book).argmin(dim=-1)
        return book, code

    def glance(self, view: LayerView) -> torch.Tensor:
        keys = view.keys.float()
        h_kv, t, d = keys.shape
        g = view.model.group_size
        q = view.queries.float()
        out = torch.zeros(h_kv, t)
        valid = view.valid_mask()
        for h in range(h_kv):
            n = int(valid[h].sum())
            if n == 0:
                continue
            book, code = self._codebooks(keys[h, :n])                        # valid entries come first per head
            qh = q[h * g: (h + 1) * g].reshape(-1, self.parts, d // self.parts)  # (g*N, P, d/P)
            member = torch.nn.functional.one_hot(code, book.shape[1]).float()      # (P, n, W)
            best = torch.zeros(n)
            for s in range(0, qh.shape[0], self.rows):
                table = torch.einsum("npe,pwe->npw", qh[s: s + self.rows], book)   # (c, P, W)
                approx = torch.einsum("cpw,pnw->cn", table, member)                # (c, n): summed lookups
                probs = (approx * view.model.scale).softmax(dim=-1)
                best = torch.maximum(best, probs.amax(dim=0))
            out[h, :n] = best
        return out

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.keys.shape[-1] % self.parts:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self.glance(view)
        valid = view.valid_mask()
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            score[h, : self.initial] = float("inf")
            score[h, max(0, c - self.local): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
