"""Codeword lookup memory (board C, decode-time).

Exact attention over a full capped layer is the expensive part of choosing what to keep. Codeword lookup
memory describes each key by a handful of short codewords, one per slice of its channels, learnt from the layer's
own keys when it reaches its cap; the newest queries are then scored against the codewords instead of the keys,
and the entries whose codewords answer the queries best are kept.
"""

from __future__ import annotations

import numpy as np
import torch

from harness import EvictionMethod, Keep, LayerView


def _codebook(x: np.ndarray, n_words: int, rounds: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Plain Lloyd iterations on (T, d) rows: (n_words, d) centres and (T,) assignments."""
    rng = np.random.default_rng(seed)
    n_words = min(n_words, x.shape[0])
    centres = x[rng.choice(x.shape[0], n_words, replace=False)].copy()
    for _ in range(rounds):
        d2 = ((x[:, None, :] - centres[None, :, :]) ** 2).sum(-1)
        assign = d2.argmin(1)
        for c in range(n_words):
            members = x[assign == c]
            if len(members):
                centres[c] = members.mean(0)
    d2 = ((x[:, None, :] - centres[None, :, :]) ** 2).sum(-1)
    return centres, d2.argmin(1)


class CodewordLookup(EvictionMethod):
    name = "codeword_lookup"
    query_window = 16
    slices = 4
    words = 16
    rounds = 6

    def _approx_logits(self, q: np.ndarray, k: np.ndarray, seed: int) -> np.ndarray:
        """(N, D) queries against (T, D) keys through per-slice codewords: (N, T)."""
        d = k.shape[1]
        edges = np.linspace(0, d, self.slices + 1).astype(int)
        out = np.zeros((q.shape[0], k.shape[0]), dtype=np.float32)
        for s in range(self.slices):
            a, b = edges[s], edges[s + 1]
            centres, codes = _codebook(k[:, a:b], self.words, self.rounds, seed + s)
            table = q[:, a:b] @ centres.T                  # (N, words): one dot product per codeword
            out += table[:, codes]
        return out

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        valid = view.valid_mask()
        q_all = view.queries.float().cpu().numpy()
        score = torch.full(view.keys.shape[:2], float("-inf"))
        for h in range(view.n_kv_heads):
            live = valid[h].nonzero().flatten().cpu()
            k = view.keys[h, live].float().cpu().numpy()
            acc = np.zeros(live.numel(), dtype=np.float64)
            rows = q_all[h * g:(h + 1) * g].reshape(-1, q_all.shape[-1])      # the group's queries, stacked
            logits = self._approx_logits(rows, k, seed=31 * view.layer + h) * view.model.scale
            logits -= logits.max(1, keepdims=True)
            p = np.exp(logits)
            acc += (p / p.sum(1, keepdims=True)).sum(0) / g
            score[h, live] = torch.from_numpy(acc).float()
        return Keep.from_topk(score.to(view.keys.device), view.budget, view.valid)
