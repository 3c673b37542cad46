"""Entropy-Split: per-head budgets proportional to each head's observation-window attention entropy."""

import numpy as np
import torch

from harness import EvictionMethod, Keep, LayerView


def entropy_split(ent: np.ndarray, total: int, avail: np.ndarray, floor: int) -> np.ndarray:
    """Integer per-head budgets: a floor each, the rest in proportion to ``ent``, capped by ``avail``."""
    h = ent.shape[0]
    floor = int(min(floor, total // h))
    alloc = np.minimum(np.full(h, floor), avail)
    left = total - int(alloc.sum())
    while left > 0:
        room = avail - alloc
        open_ = room > 0
        if not open_.any():
            break
        w = np.where(open_, ent, 0.0)
        w = w / w.sum() if w.sum() > 0 else open_ / open_.sum()
        share = np.minimum(np.floor(w * left).astype(np.int64), room)
        if share.sum() == 0:  # hand out the remainder one token at a time, largest weight first
            for i in np.argsort(-w):
                if left == 0:
                    break
                if room[i] > 0:
                    share[i] += 1
                    left -= 1
            alloc += share
            continue
        alloc += share
        left -= int(share.sum())
    return alloc


class EntropySplit(EvictionMethod):
    name = "entropy_split"
    query_window = 32
    question_queries = True
    floor_frac = 0.25

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()  # (H_q, N, T)
        scores = view.group(attn.sum(dim=1), "mean")  # (H_kv, T)
        if view.phase == "decode" or view.valid is not None:
            return Keep.from_topk(scores, view.budget, view.valid)
        # mean entropy of each query's distribution, in numpy, averaged over the head's query heads
        p = attn.clamp_min(1e-12).cpu().numpy()
        ent_q = -(p * np.log(p)).sum(axis=-1).mean(axis=1)  # (H_q,)
        ent = ent_q.reshape(view.n_kv_heads, -1).mean(axis=1)
        avail = valid.sum(dim=1).cpu().numpy().astype(np.int64)
        total = min(view.budget * view.n_kv_heads, int(avail.sum()))
        k = entropy_split(ent, total, avail, int(self.floor_frac * view.budget))
        return Keep.from_topk(scores, torch.as_tensor(k), view.valid)
