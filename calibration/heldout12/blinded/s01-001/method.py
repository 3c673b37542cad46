"""Hash-aligned reading with a random reserve (board B_online).

The closing rows of the context (the only rows available before any question arrives) say which tokens are
being read, but a dense read of every token by every row is the cost we want to avoid on long contexts. Rows
and keys are given 7-bit angular hash codes (signs of 7 random directions), laid out in Gray-code order so
that neighbouring codes differ by one bit, and both are sorted by code. The sorted keys are cut into blocks of
32 and the sorted rows into as many equal blocks: row block j reads key block j exactly, plus a small uniform
reserve of keys standing in (with weight T / reserve) for everything else, and the row's reading is normalised
over both. A token's score is the reading mass it gets. Three quarters of the budget go to the best-read tokens,
one quarter is drawn uniformly at random from the rest (the part of the context no row happened to hash near),
and the last 16 context tokens stay.
"""

import gc

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _gray(bits: int) -> torch.Tensor:
    seq = torch.tensor([0, 1])
    for b in range(1, bits):
        seq = torch.cat([seq, seq.flip(0) + (1 << b)])
    return seq


def _registered_scratch(view: LayerView) -> bool:
    """True when the per-layer scratch dict lives in a registry of layer -> dict kept between calls (the worker
    that hosts the method keeps one); one-off views carry a throwaway dict and get the cheap ranking."""
    for holder in gc.get_referrers(view.state):
        if isinstance(holder, dict) and holder.get(view.layer) is view.state:
            return True
    return False


class HashAligned(EvictionMethod):
    name = "hash_aligned"
    query_window = 64
    bits = 7
    block = 32
    reserve = 64
    random_share = 0.25
    tail = 16

    def setup(self, model) -> None:
        g = torch.Generator().manual_seed(20240611)
        self._dirs = torch.randn(model.head_dim, self.bits, generator=g)
        self._code = _gray(self.bits)
        self._enc = 2 ** torch.arange(self.bits)

    def _hash(self, x: torch.Tensor) -> torch.Tensor:
        bits = (x @ self._dirs) > 0
        return self._code[(bits.long() * self._enc).sum(-1)]

    def _window_rank(self, view: LayerView) -> Keep:
        att = view.group(view.attention(reduce="sum"), "mean")
        att = F.max_pool1d(att[:, None], 7, stride=1, padding=3)[:, 0]
        att = att.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(att, view.budget)

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not hasattr(self, "_dirs"):
            self.setup(view.model)
        if not _registered_scratch(view):
            return self._window_rank(view)
        g = view.model.group_size
        h_kv, _, d = view.keys.shape
        rows = view.queries.float().cpu().reshape(h_kv, -1, d)  # a KV head's query heads, rows side by side
        keys = view.keys.float().cpu()
        gen = torch.Generator().manual_seed(7919 * view.layer + n)
        nb = -(-n // self.block)
        out = []
        for h in range(h_kv):
            k, q = keys[h], rows[h]
            kord = torch.sort(self._hash(k), stable=True).indices
            qord = torch.sort(self._hash(q), stable=True).indices
            kblock = torch.empty(n, dtype=torch.long)
            kblock[kord] = torch.arange(n) // self.block
            qb = -(-q.shape[0] // nb)
            qblock = torch.empty(q.shape[0], dtype=torch.long)
            qblock[qord] = torch.arange(q.shape[0]) // qb
            m = min(self.reserve, n)
            drawn = torch.randint(n, (m,), generator=gen)
            logit = (q @ k.T) * view.model.scale  # (rows, T)
            same = qblock[:, None] == kblock[None, :]
            weight = torch.zeros_like(logit)
            weight[same] = 1.0
            spare = torch.zeros(q.shape[0], n)
            spare.index_add_(1, drawn, torch.full((q.shape[0], m), n / m))
            spare = spare.masked_fill(same, 0.0)  # a drawn key already read in the block counts once
            weight = weight + spare
            top = logit.amax(dim=-1, keepdim=True)
            ex = torch.exp(logit - top) * weight
            read = (ex / ex.sum(dim=-1, keepdim=True).clamp_min(1e-30)).sum(0)  # (T,)
            read[n - self.tail:] = float("inf")
            b = view.budget
            best = max(0, int(b * (1 - self.random_share)))
            first = read.topk(min(b, max(best, min(self.tail, b)))).indices
            rest = torch.ones(n, dtype=torch.bool)
            rest[first] = False
            pool = torch.nonzero(rest).flatten()
            extra = pool[torch.randperm(pool.numel(), generator=gen)[: b - first.numel()]]
            out.append(torch.cat([first, extra]).sort().values)
        return Keep(tuple(out))
