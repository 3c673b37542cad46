"""BigBird's sparse pattern as a decode-time cache (board C): a credited port.

BigBird (Zaheer et al., 2020, arXiv 2007.14062) attends with three components: a few global tokens, a sliding
window, and random blocks. Ported training-free to eviction: when a layer reaches its cap, each KV head keeps
g = 8 global tokens (the sequence's opening tokens, BigBird's ITC variant), a window of the newest tokens (half of
the cap), and fills the rest with random blocks of 8 contiguous tokens drawn from the middle.

Deviations from the paper: BigBird redraws its random blocks per query block inside attention; a cache cannot
redraw what it has dropped, so the draw happens once per eviction (seeded by layer, head and the newest
position, so runs are reproducible), and blocks kept earlier can be dropped by a later draw. No training; the
model was never trained with this pattern.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class BigBirdCache(EvictionMethod):
    name = "bigbird_cache"
    n_global = 8
    window_share = 0.5
    block = 8

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            n = idx.numel()
            b = min(view.budget, n)
            gl = min(self.n_global, b // 8)
            win = int(self.window_share * b)
            keep = torch.zeros(n, dtype=torch.bool)
            keep[:gl] = True
            keep[n - win:] = True
            room = b - int(keep.sum())
            mid = torch.arange(gl, n - win)
            gen = torch.Generator().manual_seed(
                (view.layer * 1_000_003 + h * 7919 + int(view.positions[h, idx[-1]])) % (2 ** 31))
            blocks = list(torch.split(mid, self.block))
            for j in torch.randperm(len(blocks), generator=gen).tolist():
                if room <= 0:
                    break
                blk = blocks[j][:room]
                keep[blk] = True
                room -= blk.numel()
            out.append(idx[keep])
        return Keep(tuple(out))
