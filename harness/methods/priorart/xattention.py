"""XAttention (Xu et al., 2025, arXiv 2503.16428): block importance from anti-diagonal sums. With stride S, the
queries are regrouped as [q_{S-1}, q_{S-2}, ..., q_0] and the keys as [k_0, ..., k_{S-1}] per S-group, so one
dot product sums an anti-diagonal of each S x S cell; these logits (/ sqrt(D) / S) go through a causal softmax
and are summed into blocks of 128 x 128; blocks are kept in decreasing order until their mass reaches the
threshold (0.9), the first block and the query's own (diagonal) block always. Here the query block is the last
128 prompt queries (their own tokens are the diagonal block, kept), block mass averaged over each KV head's
query heads; blocks are taken whole until the threshold or the budget (the remainder below one block: best
tokens of the next block by position). Defaults: stride 8, block 128, threshold 0.9 (the paper's LLM setting).
Settings: pa_xattention; pa_xattention?threshold=1.0; pa_xattention?stride=16; pa_xattention?threshold=0.95"""

from typing import ClassVar

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView
from harness.methods.priorart._blocks import whole_blocks_first


class XAttention(EvictionMethod):
    name = "pa_xattention"
    paper: ClassVar[str] = "XAttention"
    query_window = 128  # one query block
    block_size = 128
    stride = 8
    threshold = 0.9

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s, b, t = self.stride, self.block_size, view.n_tokens
        n = (view.queries.shape[1] // s) * s
        if n == 0:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q, qpos = view.queries[:, -n:].float(), view.query_positions[-n:]
        keys = F.pad(view.keys.float(), (0, 0, 0, (-t) % b))
        rq = torch.cat([q[:, s - 1 - i:: s] for i in range(s)], dim=-1)  # (H_q, n/S, S*D)
        rk = torch.cat([keys[:, i:: s] for i in range(s)], dim=-1)  # (H_kv, T'/S, S*D)
        g = view.model.group_size
        logits = rq @ rk.repeat_interleave(g, 0).transpose(1, 2) / (q.shape[-1] ** 0.5) / s
        kstart = torch.arange(rk.shape[1], device=logits.device) * s  # first key index of each reduced key
        hide = kstart[None, :] > qpos[s - 1:: s].to(logits.device)[:, None]  # causal on the reduced grid
        hide = hide | (kstart >= t)[None, :]
        probs = logits.masked_fill(hide, float("-inf")).softmax(-1).nan_to_num(0.0)
        blocks = view.group(probs.sum(1).view(probs.shape[0], -1, b // s).sum(-1), "mean")  # (H_kv, nb)
        nb = blocks.shape[1]
        forced = torch.zeros_like(blocks, dtype=torch.bool)
        forced[:, 0] = True  # the first block and the query block's own (diagonal) blocks
        forced[:, int(qpos.min()) // b:] = True
        key = blocks.masked_fill(forced, float("inf"))
        order = key.argsort(dim=1, descending=True, stable=True)
        cum = blocks.gather(1, order).cumsum(1)
        n_sel = (cum < self.threshold * blocks.sum(-1, keepdim=True)).sum(1) + 1  # until the threshold
        n_sel = torch.maximum(n_sel, forced.sum(1)).clamp(max=nb)
        lengths = (t - torch.arange(nb, device=blocks.device) * b).clamp(0, b)
        tokens = lengths[order].cumsum(1).gather(1, (n_sel - 1)[:, None])[:, 0]
        ranked = whole_blocks_first(key, view.positions.float(), b)
        ranked = ranked.masked_fill(view.positions >= qpos.min(), float("inf"))
        limit = torch.clamp(tokens, max=view.budget)
        return Keep.from_topk(ranked, limit, view.valid)
