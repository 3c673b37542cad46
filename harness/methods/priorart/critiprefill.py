"""CritiPrefill (Lv et al., 2024, arXiv 2409.12490): queries are cut into segments (512) and keys into blocks
(32); a block's criticality for a segment is estimated from the segment's channel-wise max/min query and the
block's max/min key (official code: max(mean_{q in {qmax,qmin}} q.kmax, mean_{q} q.kmin), averaged over the GQA
group, softmax over blocks); the segment attends only to its top blocks and always to its own segment. Here the
segment is the last 512 prompt queries; its top blocks are kept whole within the budget, the segment's own
tokens always. Layer fusion (mixing the previous layer's criticality, 0.25) is cross-layer and not reproduced.
Remainder below one block: best tokens of the next block by position.
Settings: pa_critiprefill; pa_critiprefill?block_size=16; pa_critiprefill?query_window=256; pa_critiprefill?block_size=64"""

from typing import ClassVar

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView
from harness.methods.priorart._blocks import whole_blocks_first


class CritiPrefill(EvictionMethod):
    name = "pa_critiprefill"
    paper: ClassVar[str] = "CritiPrefill"
    query_window = 512  # the segment size
    block_size = 32

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h, t, b, g = view.n_kv_heads, view.n_tokens, self.block_size, view.model.group_size
        q = view.queries.float()
        qq = torch.stack([q.amax(dim=1), q.amin(dim=1)], dim=1)  # (H_q, 2, D)
        keys = F.pad(view.keys.float(), (0, 0, 0, (-t) % b)).view(h, -1, b, q.shape[-1])
        kmax = keys.amax(2).repeat_interleave(g, 0)
        kmin = keys.amin(2).repeat_interleave(g, 0)
        crit = torch.maximum((qq @ kmax.transpose(1, 2)).mean(1), (qq @ kmin.transpose(1, 2)).mean(1))
        blocks = view.group(crit, "mean").softmax(dim=-1)  # (H_kv, nb)
        ranked = whole_blocks_first(blocks, view.positions.float(), b)
        ranked = ranked.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(ranked, view.budget, view.valid)
