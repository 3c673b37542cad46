"""Sparse Lens: estimate the question's attention through the few channels that carry it."""

import torch

from harness import EvictionMethod, Keep, LayerView


class SparseLens(EvictionMethod):
    name = "sparse_lens"
    question_queries = True
    channels = 16
    lead = 4

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        H, _, D = view.keys.shape
        g = view.model.group_size
        q = view.queries.float().reshape(H, -1, D)                            # the group's queries per KV head
        k = view.keys.float()
        weight = q.abs().mean(dim=1) * k.abs().mean(dim=1)                    # (H, D) channel salience
        lens = weight.topk(min(self.channels, D), dim=-1).indices             # (H, r)
        qs = torch.gather(q, 2, lens[:, None, :].expand(-1, q.shape[1], -1))
        ks = torch.gather(k, 2, lens[:, None, :].expand(-1, n, -1))
        logits = torch.bmm(qs, ks.transpose(1, 2)) * (view.model.scale * (D / lens.shape[1]) ** 0.5)
        qpos = view.query_positions.repeat(g)
        logits = logits.masked_fill(view.positions[:, None, :] > qpos[None, :, None], float("-inf"))
        est = torch.softmax(logits, dim=-1).sum(dim=1)                        # (H, T)
        start = view.query_positions.min()
        est = est.masked_fill(view.positions >= start, float("inf"))
        est[:, : self.lead] = float("inf")
        return Keep.from_topk(est, view.budget, view.valid)
