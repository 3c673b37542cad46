"""Shelf gating: the cache is cut into shelves of equal size; each closing query rates a shelf by its product with
the shelf's average key, the best-rated shelves stay whole and the newest stretch always stays."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class ShelfGate(EvictionMethod):
    name = "shelf_gate"
    query_window = 8
    shelf = 32

    def select(self, view: LayerView) -> Keep:
        group = view.model.group_size
        valid = view.valid_mask()
        picks = []
        for head in range(view.n_kv_heads):
            count = int(valid[head].sum())
            shelves = count // self.shelf
            if shelves < 2 or view.budget >= count:
                picks.append(torch.arange(max(0, count - view.budget), count))
                continue
            avg = torch.stack([view.keys[head, s * self.shelf:(s + 1) * self.shelf].float().mean(0)
                               for s in range(shelves)])
            rows = view.queries[head * group:(head + 1) * group].float().reshape(-1, avg.shape[-1])
            rating = torch.einsum("qd,sd->s", rows, avg)
            room = max(0, view.budget // self.shelf - 1)
            best = rating[:-1].argsort(descending=True)[:room]
            kept = [torch.arange(int(s) * self.shelf, (int(s) + 1) * self.shelf) for s in best]
            kept.append(torch.arange(count - self.shelf, count))
            picks.append(torch.cat(kept).unique()[: view.budget])
        return Keep(tuple(picks))
