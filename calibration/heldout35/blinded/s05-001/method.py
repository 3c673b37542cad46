"""Sign Match: a decode-time cache ranked by cheap sign fingerprints of keys and queries.

Every key and query is reduced to a short signature (the signs of a few fixed random projections, drawn once
per layer). At each cap, the queries since the previous call compare their signatures with every cached key's;
the agreement (matching signs) is averaged and folded into a running per-token tally carried by position, so
tokens whose signatures keep disagreeing with the recent queries are the ones given back. A few first tokens and
the newest ones are kept regardless.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SignMatch(EvictionMethod):
    name = "sign_match"
    query_window = 64
    planes = 16
    sinks = 4
    newest = 8
    carry = 0.9

    def _planes(self, view: LayerView) -> torch.Tensor:
        p = view.state.get("sm_planes")
        if p is None:
            gen = torch.Generator().manual_seed(7919 * (view.layer + 1))
            p = torch.randn(view.keys.shape[-1], self.planes, generator=gen)
            view.state["sm_planes"] = p
        return p.to(view.keys.device)

    def select(self, view: LayerView) -> Keep:
        b = view.budget
        if view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        p = self._planes(view)
        ks = torch.sign(view.keys.float() @ p)                          # (H_kv, T, P) in {-1, 0, 1}
        seen = view.state.get("sm_seen", -1)
        fresh = view.query_positions > seen
        tally = view.recall("sm_tally") * self.carry
        if bool(fresh.any()):
            qs = torch.sign(view.queries[:, fresh].float() @ p)         # (H_q, n, P)
            g = view.model.group_size
            qs = qs.reshape(view.n_kv_heads, g * qs.shape[1], self.planes)
            agree = 0.5 * (self.planes + torch.bmm(qs, ks.transpose(1, 2)))  # matching signs per pair
            tally = tally + agree.mean(dim=1) / self.planes
            view.state["sm_seen"] = int(view.query_positions.max())
        view.remember("sm_tally", tally)
        scores = tally.clone()
        counts = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - self.newest):n] = float("inf")
            scores[h, :min(self.sinks, n)] = float("inf")
        return Keep.from_topk(scores, b, view.valid)
