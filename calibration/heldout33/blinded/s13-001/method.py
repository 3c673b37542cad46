"""Port of RaaS (arXiv 2502.11147), "Reasoning-aware attention sparsity": milestone tokens are used for a while
and then abandoned, so each cached token is kept by the *recency of its last strong attention* (a timestamp),
O(L) memory. Port for the harness's board C: the timestamp is refreshed per call over the queries since the
previous call (the harness asks once per block, not per step); "strong" = attention above 1/n_visible of the
query that looks; the paper keeps the whole prefill, which a hard cap cannot always hold, so here only the
first 4 tokens are pinned and prompt tokens compete like the others. Threshold and pins are the porter's."""

import torch

from harness import EvictionMethod, Keep, LayerView


class RaaSPort(EvictionMethod):
    name = "raas_port"
    query_window = 512
    pinned = 4

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        # a token enters with its own position as timestamp (it is "fresh" when created)
        stamp = torch.maximum(view.recall("stamp", fill=-1.0), view.positions.float())
        if view.queries is not None:
            att = view.attention()                                        # (Hq, N, T)
            qpos = view.query_positions.float()
            vis = (view.positions[:, None, :].float() <= qpos[None, :, None]) & valid[:, None, :]
            vis = vis.repeat_interleave(view.model.group_size, dim=0)
            strong = (att * vis.sum(-1, keepdim=True).clamp_min(1) > 1.0) & vis
            when = torch.where(strong, qpos[None, :, None].expand_as(att), torch.full_like(att, -1.0))
            stamp = torch.maximum(stamp, view.group(when.max(dim=1).values, "max"))
        view.remember("stamp", stamp)
        score = stamp.masked_fill(view.positions < self.pinned, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
