"""Codebook echo scoring (board B_offline, one-off reconstruction pass allowed).

Each KV head's keys are compressed into a product code: the 64 lanes are cut into 4 slices, each slice gets a
16-word codebook (a few Lloyd steps), and every key is stored as 4 code words. The reconstruction pass's queries then
score the context through the codebooks alone (a query-slice x code-word table, looked up per key), and each token
keeps the largest softmax weight any repeat query gives it under the coded logits (max over the group's query heads
too). The four opening tokens are pinned. Without a reconstruction pass the newest tokens are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _lloyd(x: torch.Tensor, words: int, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """x (n, s) -> (codebook (words, s), code (n,))."""
    n = x.shape[0]
    book = x[torch.linspace(0, n - 1, words).long()].clone()
    for _ in range(steps):
        code = torch.cdist(x, book).argmin(1)
        for w in range(words):
            m = code == w
            if bool(m.any()):
                book[w] = x[m].mean(0)
    return book, torch.cdist(x, book).argmin(1)


class CodebookEcho(EvictionMethod):
    name = "codebook_echo"
    reconstruction_queries = True
    slices = 4
    words = 16
    steps = 5
    pinned = 4
    rows = 256

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        h_kv, t, d = view.keys.shape
        w = d // self.slices
        mask = view.valid_mask()
        best = torch.zeros(h_kv, t, device=view.keys.device)
        for h in range(h_kv):
            n = int(mask[h].sum())
            k = view.keys[h, :n].float()
            books, codes = [], []
            for s in range(self.slices):
                b, c = _lloyd(k[:, s * w:(s + 1) * w], min(self.words, n), self.steps)
                books.append(b)
                codes.append(c)
            q_all = view.queries[h * g:(h + 1) * g].float().reshape(-1, d)
            for start in range(0, q_all.shape[0], self.rows):
                q = q_all[start:start + self.rows]
                logit = torch.zeros(q.shape[0], n, device=k.device)
                for s in range(self.slices):
                    table = q[:, s * w:(s + 1) * w] @ books[s].T            # (rows, words)
                    logit += table[:, codes[s]]
                p = (logit * view.model.scale).softmax(-1)
                best[h, :n] = torch.maximum(best[h, :n], p.amax(0))
        best[:, : self.pinned] = float("inf")
        return Keep.from_topk(best, view.budget, view.valid)
