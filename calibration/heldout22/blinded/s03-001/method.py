"""Cross-hatch salience (board B_online, query-agnostic prefill).

The closing rows of the context are folded into short strides, and so are the keys. Folding a stride of rows in
reverse order against a stride of keys in forward order and taking one dot product sums the logits along the
stride's cross-hatch (its anti-diagonal), which touches every row and every key of the stride once: a cheap probe
of the whole tile that no vertical or diagonal pattern can slip past. The folded logits are normalised per folded
row, pooled into blocks of keys, and the context keeps its blocks in order of pooled mass (opening tokens and the
closing rows always kept).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _fold(x: torch.Tensor, stride: int, reverse: bool) -> torch.Tensor:
    """(..., L, D) -> (..., L // stride, stride * D): consecutive rows concatenated, optionally reversed."""
    *lead, l, d = x.shape
    x = x[..., : (l // stride) * stride, :].reshape(*lead, l // stride, stride, d)
    if reverse:
        x = x.flip(-2)
    return x.reshape(*lead, l // stride, stride * d)


class CrossHatch(EvictionMethod):
    name = "cross_hatch"
    query_window = 128
    stride = 8
    block = 32
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g, s = view.model.group_size, self.stride
        h_kv, t, d = view.keys.shape
        ok = view.valid_mask()
        pad = (-t) % s
        k = view.keys.float().masked_fill(~ok[..., None], 0.0)
        if pad:
            k = torch.cat([k, k.new_zeros(h_kv, pad, d)], dim=1)
        kf = _fold(k, s, reverse=False)                                  # (H_kv, T/s, s*D)
        q = view.queries.float()
        qf = _fold(q, s, reverse=True).view(h_kv, g, -1, s * d)          # (H_kv, G, N/s, s*D)
        logit = torch.einsum("hgnf,hmf->hgnm", qf, kf) * view.model.scale / s
        # a folded row may only look at folded keys that start before its first row
        qstart = view.query_positions[: (q.shape[1] // s) * s].view(-1, s)[:, 0]
        kfirst = torch.cat([view.positions[0], view.positions[0].new_full((pad,), 1 << 30)]).view(-1, s)[:, 0]
        hide = kfirst[None, :] > qstart[:, None]
        kok = torch.cat([ok, ok.new_zeros(h_kv, pad)], dim=1).view(h_kv, -1, s).any(-1)
        logit = logit.masked_fill(hide[None, None] | ~kok[:, None, None, :], float("-inf"))
        mass = logit.softmax(-1).nan_to_num(0.0).sum(dim=(1, 2))         # (H_kv, T/s)
        per = self.block // s
        m = mass.shape[1]
        bpad = (-m) % per
        blk = torch.cat([mass, mass.new_zeros(h_kv, bpad)], 1).view(h_kv, -1, per).sum(-1)  # (H_kv, blocks)
        tok = blk.repeat_interleave(self.block, dim=1)[:, :t]
        tok = tok + 1e-6 * view.positions.float() / max(1, t)            # later token first inside a block
        tok[:, : self.opening] = float("inf")
        tok = tok.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(tok, view.budget, view.valid)
