"""Reader-group retention (board B_online).

The closing 64 context rows do not read the context in 64 different ways: rows fall into a few reading
habits. We find them per query head: each row gets a 32-bit sign code (signs of 32 fixed random directions),
and the codes are grouped into 8 habits by a few rounds of k-means in Hamming space (farthest-first seeds).
Each habit is represented by the mean of its rows; the representative reads all keys (softmax at the model's
scale) and nominates its own most-read keys, its share of the budget; the nominations of a KV head's query
heads are pooled. Keys are ranked first by nomination, then by the habits' reading mass weighted by habit size,
so a habit followed by a single row still gets its keys in. The last 16 context tokens stay.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ReaderGroups(EvictionMethod):
    name = "reader_groups"
    query_window = 64
    habits = 8
    code_bits = 32
    rounds = 10
    tail = 16

    def _planes(self, d: int, device) -> torch.Tensor:
        if getattr(self, "_p", None) is None or self._p.shape[0] != d:
            self._p = torch.randn(d, self.code_bits, generator=torch.Generator().manual_seed(3))
        return self._p.to(device)

    def _groups(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """rows (N, D) -> labels (N,), representatives (C, D), sizes (C,): Hamming k-means on sign codes."""
        codes = (rows @ self._planes(rows.shape[1], rows.device) > 0).float()  # (N, B)
        c = min(self.habits, rows.shape[0])
        seeds = [0]
        dist = (codes - codes[0]).abs().sum(-1)
        for _ in range(1, c):
            nxt = int(dist.argmax())
            seeds.append(nxt)
            dist = torch.minimum(dist, (codes - codes[nxt]).abs().sum(-1))
        cent = codes[seeds].clone()
        labels = torch.zeros(rows.shape[0], dtype=torch.long, device=rows.device)
        for _ in range(self.rounds):
            ham = torch.cdist(codes, cent, p=1)
            labels = ham.argmin(-1)
            onehot = torch.nn.functional.one_hot(labels, c).float()  # (N, C)
            votes = onehot.T @ codes  # (C, B): how many members have each bit set
            size = onehot.sum(0)[:, None]
            cent = torch.where(size > 0, (votes * 2 > size).float(), cent)  # majority bit; empty habits stay
        means = torch.zeros(c, rows.shape[1], device=rows.device).index_add_(0, labels, rows)
        size = torch.bincount(labels, minlength=c).float()
        return labels, means / size.clamp_min(1)[:, None], size

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        nominated = torch.zeros(view.n_kv_heads, n, device=view.keys.device)
        mass = torch.zeros(view.n_kv_heads, n, device=view.keys.device)
        share = max(1, view.budget // (self.habits * g))
        for hq in range(view.queries.shape[0]):
            kv = hq // g
            _, reps, size = self._groups(view.queries[hq].float())
            read = (reps @ view.keys[kv].float().T * view.model.scale).softmax(-1)  # (C, T)
            top = read.topk(min(share, n), dim=-1).indices
            nominated[kv].index_add_(0, top.flatten(), torch.ones(top.numel(), device=read.device))
            mass[kv] += (read * size[:, None]).sum(0)
        score = nominated + mass / mass.sum(-1, keepdim=True).clamp_min(1e-12)
        score[:, n - self.tail:] = float("inf")
        return Keep.from_topk(score, view.budget)
