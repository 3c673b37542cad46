"""Spread-cover retention (board B_offline).

Without the question, the safest cache is one from which every part of the context can still be reached. We
read "reachable" geometrically: a token is covered when some kept key points nearly the same way. Keys are
compared without their positional rotation (un-rotated with the layer's own RoPE), so that two mentions of the
same thing far apart count as the same direction. Each KV head keeps the set that makes the worst-covered token
as well covered as possible, built greedily: start from the most isolated key (the one farthest from its
nearest neighbour), then repeatedly add the key farthest (cosine distance) from everything kept so far. The last
16 context tokens are kept first and count as cover. This is a slow, one-off pass (budget x T distance updates
per head), which board B_offline allows.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SpreadCover(EvictionMethod):
    name = "spread_cover"
    tail = 16

    def _directions(self, view: LayerView, h: int) -> torch.Tensor:
        k = view.keys[h].float()
        try:
            k = view.rotate(k, -view.positions[h])
        except ValueError:
            pass
        return F.normalize(k, dim=-1)

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        b = view.budget
        if b >= n or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        out = []
        for h in range(view.n_kv_heads):
            u = self._directions(view, h)
            gap = 1.0 - u @ u.T  # (T, T) cosine distance
            taken = torch.zeros(n, dtype=torch.bool, device=u.device)
            tail = min(self.tail, b)
            taken[n - tail:] = True
            picks = tail
            if picks == 0 or b > picks:
                # the most isolated key: largest distance to its nearest other key
                lonely = (gap + torch.eye(n, device=u.device) * 4.0).amin(dim=0)
                first = int(lonely.masked_fill(taken, -1.0).argmax())
                taken[first] = True
                picks += 1
            cover = gap[taken].amin(dim=0)  # distance of every token to its nearest kept key
            while picks < b:
                nxt = int(cover.masked_fill(taken, -1.0).argmax())
                taken[nxt] = True
                cover = torch.minimum(cover, gap[nxt])
                picks += 1
            out.append(torch.nonzero(taken).flatten())
        return Keep(tuple(out))
