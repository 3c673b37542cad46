"""Anchor folding (board B_online, rewrites the cache).

Eviction throws information away; we fold it instead. Every context row's attention is accumulated over the
whole context (causal), averaged over all heads of the layer, and the best-read tokens become anchors, shared by
every KV head. Each remaining token is folded into its nearest anchor along the sequence: the anchor's key and
value become the plain average of itself and everything folded into it, at the anchor's position. The first
``head`` tokens and the last token stay as they are.
"""

import torch

from harness import EvictionMethod, Keep, LayerView, Rewrite


class AnchorFold(EvictionMethod):
    name = "anchor_fold"
    query_window = 1 << 20  # every context row
    head = 4
    rows = 256

    def _received(self, view: LayerView) -> torch.Tensor:
        q, qpos = view.queries.float(), view.query_positions
        k = view.keys.float().repeat_interleave(view.model.group_size, 0)  # (H_q, T, D)
        got = torch.zeros(k.shape[0], k.shape[1], device=k.device)
        kpos = view.positions.repeat_interleave(view.model.group_size, 0)
        for lo in range(0, q.shape[1], self.rows):
            blk = q[:, lo: lo + self.rows]
            w = torch.bmm(blk, k.transpose(1, 2)) * view.model.scale
            w = w.masked_fill(kpos[:, None, :] > qpos[lo: lo + self.rows][None, :, None], float("-inf"))
            got += w.softmax(-1).nan_to_num(0.0).sum(1)
        return got.mean(0)  # one score per token for the whole layer

    def select(self, view: LayerView) -> Keep | Rewrite:
        t, b, h_kv = view.n_tokens, view.budget, view.n_kv_heads
        keys, vals, pos = view.keys, view.values, view.positions
        if b >= t or view.queries is None or view.valid is not None or b <= self.head + 1:
            return Keep.from_topk(pos.float(), b, view.valid)
        score = self._received(view)
        dev = keys.device
        fixed = torch.zeros(t, dtype=torch.bool, device=dev)
        fixed[: self.head] = True
        fixed[t - 1] = True
        middle = (~fixed).nonzero().flatten()
        n_anchor = b - int(fixed.sum())
        anchors = middle[score[middle].topk(n_anchor).indices].sort().values
        folded = middle[~torch.isin(middle, anchors)]
        # nearest anchor along the sequence (the earlier one on a tie)
        gap = (folded[:, None] - anchors[None, :]).abs()
        target = anchors[gap.argmin(dim=1)]
        kf, vf = keys.float().clone(), vals.float().clone()
        for hd in range(h_kv):
            idx = target[:, None].expand(-1, kf.shape[-1])
            kf[hd].scatter_reduce_(0, idx, keys[hd, folded].float(), reduce="mean", include_self=True)
            vf[hd].scatter_reduce_(0, idx, vals[hd, folded].float(), reduce="mean", include_self=True)
        kept = torch.cat([fixed.nonzero().flatten(), anchors]).sort().values
        dtype = keys.dtype
        return Rewrite(tuple(kf[hd, kept].to(dtype) for hd in range(h_kv)),
                       tuple(vf[hd, kept].to(dtype) for hd in range(h_kv)),
                       tuple(pos[hd, kept] for hd in range(h_kv)))
