"""LaCache (Shi et al., ICML 2025, arXiv 2507.14204, "Ladder-Shaped KV Caching for Efficient Long-Context Modeling
of Large Language Models"): positions only, a different span for every layer. After the first ``start_size`` tokens
(sinks), the older context is cut into consecutive groups of ``before = 1 + ceil((L - span) / (span - overlap))``
tokens; layer i keeps ``after = ceil(span / (span - overlap))`` of each group, at offset ``i mod (before - after +
1)``, so a token survives in ``span`` consecutive layers and the stack of layers together covers the whole range
(the ladder); the recent tokens past the ladder are kept whole. When one ladder pass cannot remove enough tokens it
starts over on the result, the groups widening to ``before + (times - 1)(before - 1)`` with a stride of ``times``
inside. Written from the official ``LaCache.__call__`` (GATECH-EIC/LaCache, ppl/lacache/kv_cache.py at 09c8295),
one call from an empty ladder (cursor at the sinks): the cache size is the layer's budget; the official
"compensation" that lets the cache grow by floor(can_reduce / 2) is left out (the harness's budget is a cap). Every
KV head of a layer keeps the same positions. Defaults: the README's span 16, overlap 0, 4 sinks. Where the budget
cannot hold the sinks and one token per layer (below 4 + L), the ladder has no room: the sinks and the newest
tokens are kept.
Settings: pa_lacache; pa_lacache?span=8; pa_lacache?span=24; pa_lacache?overlap=4
"""

import math
from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


def ladder_index(seq_len: int, cache_size: int, layer: int, n_layers: int, span: int, overlap: int,
                 start_size: int) -> list[int]:
    """The positions layer ``layer`` keeps of ``seq_len`` after one ladder call from an empty cursor."""
    cursor = start_size
    before = 1 + math.ceil((n_layers - span) / (span - overlap))
    after = min(math.ceil(span / (span - overlap)), before)
    can = before - after
    reduce = seq_len - cache_size
    if reduce <= 0:
        return list(range(seq_len))
    if can <= 0 or cache_size - start_size - n_layers < after:
        return list(range(start_size)) + list(range(seq_len - (cache_size - start_size), seq_len))
    remaining = cache_size - cursor - n_layers
    can_before = (remaining // after) * can
    startover = reduce > can_before
    incr = math.ceil(reduce / can) * after if not startover else remaining
    number = incr // after
    index = (list(range(cursor))
             + [cursor + layer % (can + 1) + before * j + k for j in range(number) for k in range(after)]
             + list(range(cursor + before * number, seq_len)))
    if startover:
        within = ((cache_size - start_size - n_layers) // after) * can
        rest = reduce - can_before
        times = math.ceil(rest / within)
        before_s = before + (times - 1) * (before - 1)
        can_s = before_s - after
        number_s = (math.ceil(rest / can_s) * after) // after
        pick = (list(range(start_size))
                + [start_size + layer % (can_s + 1) + before_s * j + times * k for j in range(number_s)
                   for k in range(after)]
                + list(range(start_size + before_s * number_s, len(index))))
        index = [index[p] for p in pick if p < len(index)]
    return index


class LaCache(EvictionMethod):
    name = "pa_lacache"
    paper: ClassVar[str] = "LaCache"
    span = 16
    overlap = 0
    start_size = 4

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero()[:, 0]
            idx = idx[view.positions[h, idx].argsort()]  # oldest first
            n = idx.numel()
            k = min(view.budget, n)
            keep = ladder_index(n, k, view.layer, view.model.n_layers, self.span, self.overlap, self.start_size)
            if len(keep) > k:  # the ladder's rounding: the newest of the ladder go first (never the sinks)
                keep = keep[:self.start_size] + keep[len(keep) - (k - self.start_size):] if k > self.start_size \
                    else keep[:k]
            out.append(idx[torch.tensor(sorted(set(keep)), dtype=torch.long, device=idx.device)].sort().values)
        return Keep(tuple(out))
