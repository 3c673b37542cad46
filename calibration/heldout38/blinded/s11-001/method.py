"""Last Word: the final token of the context has, by construction, just read everything before it; its
attention is a one-look summary of what the context considers worth keeping. Each KV head keeps its own
favourites of that single look, next to a few opening tokens and the running tail."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class LastWord(EvictionMethod):
    name = "last_word"
    query_window = 1
    openers = 4
    tail = 256

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        n = valid.sum(dim=1)
        look = None
        picks = []
        for h in range(view.n_kv_heads):
            m = int(n[h])
            k = min(view.budget, m)
            order = torch.arange(m, device=valid.device)
            guard = (order < self.openers) | (order >= m - self.tail)
            if k <= int(guard.sum()):
                # the guarded spans already fill the budget: openers first, then the newest tokens
                take = torch.cat([order[: min(self.openers, k)], order[m - max(0, k - self.openers):]])
                picks.append(take.unique())
                continue
            if look is None:
                look = view.group(view.attention()[:, -1], "max")   # (H_kv, T): the last token's one look
            w = look[h, :m].clone()
            w[guard] = float("inf")
            picks.append(w.topk(k).indices.sort().values)
        return Keep(tuple(picks))
