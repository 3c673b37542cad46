"""Relay-rank retention (board B_offline).

How much a token is read directly is a first-order signal; a token that is read by tokens that are themselves
much read matters more. We let importance flow along the context's own reading graph: every context row
starts with an equal share, and in each round every row passes its share to the tokens it reads, in proportion
to its (causal, softmax) attention; after three rounds a token's share is its importance. This is done per
query head and averaged over a KV head's query heads. The last 16 context tokens stay. It needs every context
row's attention (one dense reading matrix per query head, held once and reused for the rounds), a one-off cost
that board B_offline allows; on very long contexts only the newest 2,048 rows start with a share.
"""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class RelayRank(EvictionMethod):
    name = "relay_rank"
    query_window = 1 << 20  # every context row
    rounds = 3
    max_rows = 2048
    tail = 16

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = view.queries[:, -self.max_rows:]
        qpos = view.query_positions[-self.max_rows:]
        g = view.model.group_size
        where = torch.searchsorted(view.positions[0], qpos)  # the token each row belongs to
        share = torch.zeros(view.n_kv_heads, n, device=view.keys.device)
        for hq in range(q.shape[0]):
            kv = hq // g
            read = reference_attention(q[hq: hq + 1], view.keys[kv: kv + 1], view.positions[kv: kv + 1], qpos, 1,
                                       scale=view.model.scale)[0]  # (rows, T), causal
            s = torch.zeros(n, device=read.device)
            s[where] = 1.0 / where.numel()
            for _ in range(self.rounds):
                s = s[where] @ read  # each row hands its share to what it reads
            share[kv] += s / g
        share[:, n - self.tail:] = float("inf")
        return Keep.from_topk(share, view.budget)
