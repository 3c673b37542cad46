"""Far-apart cache: every head keeps the entries that lie farthest from one another, chosen one at a time - each
new entry is the one whose nearest kept neighbour is most distant - so no part of the context is left unvisited."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class FarApart(EvictionMethod):
    name = "far_apart"

    def _spread(self, dirs: torch.Tensor, room: int) -> torch.Tensor:
        t = dirs.shape[0]
        apart = 1.0 - dirs @ dirs.T
        chosen = [int(apart.sum(dim=1).argmax())]
        nearest = apart[chosen[0]].clone()
        for _ in range(1, min(room, t)):
            nearest[chosen] = -1.0
            nxt = int(nearest.argmax())
            chosen.append(nxt)
            nearest = torch.minimum(nearest, apart[nxt])
        return torch.tensor(sorted(chosen), dtype=torch.long)

    def select(self, view: LayerView) -> Keep:
        keys = torch.nn.functional.normalize(view.keys.float(), dim=-1)
        return Keep(tuple(self._spread(keys[h], view.budget) for h in range(view.n_kv_heads)))
