"""Last glance (board C, decode-time): remember, for each cached entry, the most recent row that looked at it
clearly; when room is needed, the entries not looked at for the longest time go."""

import torch

from harness import EvictionMethod, Keep, LayerView


class LastGlance(EvictionMethod):
    name = "last_glance"
    query_window = 64
    glance = 0.01          # a look counts when one query head gives the entry at least this share

    def select(self, view: LayerView) -> Keep:
        pos = view.positions.float()
        stamp = view.recall("glance", fill=-1.0)
        stamp = torch.where(stamp < 0, pos, stamp)                     # a new entry is stamped at its own birth
        if view.queries is not None:
            looks = view.group(view.attention(), "max")                # (H_kv, N, T)
            when = view.query_positions.float().view(1, -1, 1).expand_as(looks)
            latest = torch.where(looks >= self.glance, when, torch.full_like(when, -1.0)).amax(dim=1)
            stamp = torch.maximum(stamp, latest)
        view.remember("glance", stamp)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(pos, view.budget, view.valid)
        return Keep.from_topk(stamp + pos * 1e-9, view.budget, view.valid)
