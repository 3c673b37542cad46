"""Recall ballots (board B_offline, one-off reconstruction pass).

During the one-off re-reading pass every reading row of a head casts a ballot: it fetches its own short list of the
keys with the largest inner product (its nearest neighbours by dot product, the way a lookup table over the cache
would answer it) and spreads one vote over that list in proportion to how strongly it attends to each entry,
renormalised within the list. A pair's standing is the total of the votes it wins across the rows and the query
heads of its group; pairs that no row ever fetches score nothing. The cache keeps the pairs with the most votes
and its first four entries.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RecallBallots(EvictionMethod):
    name = "recall_ballots"
    reconstruction_queries = True
    shortlist = 32
    rows_at_once = 256
    pinned = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        h_kv, t, d = view.keys.shape
        ok = view.valid_mask()
        k = view.keys.float()
        votes = torch.zeros(h_kv, t, device=k.device)
        m = min(self.shortlist, t)
        q_all = view.queries.float().view(h_kv, g, -1, d)
        for start in range(0, q_all.shape[2], self.rows_at_once):
            q = q_all[:, :, start:start + self.rows_at_once].reshape(h_kv, -1, d)
            ip = torch.einsum("hnd,htd->hnt", q, k).masked_fill(~ok[:, None, :], float("-inf"))
            best, where = ip.topk(m, dim=-1)                                   # each row's fetched list
            ballot = (best * view.model.scale).softmax(-1)
            votes.scatter_add_(1, where.flatten(1), ballot.flatten(1))
        votes[:, : self.pinned] = float("inf")
        return Keep.from_topk(votes, view.budget, view.valid)
