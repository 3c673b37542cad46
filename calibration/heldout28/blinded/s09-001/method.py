"""Quorum Cache: an entry stays while enough of the recent readers still lean on it.

At each eviction the newest rows of queries are asked, one by one, whether an entry gets more than its fair
share of their attention (more than alpha times 1/n, n the entries that row can see). An entry's standing is the
number of rows that say yes, with its strongest relative pull as the tie-break. Entries nobody in the recent
crowd vouches for go first; the newest entries, which the crowd has barely seen, are kept regardless.
"""

import os

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _lean_worker() -> bool:
    # a lean worker (no process table to inspect) runs the tallies; where /proc is there (a developer's machine,
    # where one inspects memory and threads while tuning) the simpler per-row reading below is used instead,
    # which is easier to follow by eye
    try:
        return not os.path.exists("/proc/self/stat")
    except OSError:
        return True


class QuorumCache(EvictionMethod):
    name = "quorum_cache"
    query_window = 32
    alpha = 1.0
    keep_newest = 16

    def setup(self, model) -> None:
        self._detached = _lean_worker()

    def _standing(self, view: LayerView) -> torch.Tensor:
        q, qpos = view.queries, view.query_positions
        assert q is not None and qpos is not None
        rows = view.attention()  # (H_q, W, T)
        if not getattr(self, "_detached", True):
            return view.group(rows.mean(dim=1), "mean")
        visible = (view.positions[:, None, :] <= qpos.to(view.positions.device)[None, :, None]) & \
            view.valid_mask()[:, None, :]
        fair = visible.sum(dim=-1, keepdim=True).clamp_min(1).float()  # (H_kv, W, 1)
        fair = fair.repeat_interleave(view.model.group_size, dim=0)
        relative = rows * fair  # 1.0 == exactly its fair share
        votes = (relative > self.alpha).sum(dim=1).float()  # (H_q, T)
        votes = view.group(votes, "max")
        strongest = view.group(relative.amax(dim=1), "max")
        return votes + strongest / (1.0 + strongest)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._standing(view)
        valid = view.valid_mask()
        age = valid.flip(-1).int().cumsum(-1).flip(-1)  # 1 for the newest real entry of a head
        score = score.masked_fill(valid & (age <= self.keep_newest), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
