"""Copy Desk: the heads that copy keep a long reach; the others keep a short lane and one summary slot.

The offline pass re-reads the context, so each re-read row knows exactly which context token it is reading. A head
that copies shows it there: the row reading token j looks at the earlier j itself, or at the token right after it.
Per query head the two lookups are averaged over a sample of re-read rows; a KV head's copy score is the largest
over its query heads, and the top third of KV heads (at least one) are copy desks. Every head keeps the first 4
tokens and its newest tokens: the other heads a short lane (30 % of the layer's per-head budget), the copy desks
share everything the lanes leave. Whatever a head drops from its middle is folded into a single summary slot (the
mean of the dropped keys and of the dropped values), so nothing goes without a trace.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView, Rewrite


class CopyDesk(EvictionMethod):
    name = "copy_desk"
    reconstruction_queries = True
    n_sink = 4
    sampled_rows = 256
    desk_share = 1 / 3
    lane = 0.3

    def _copy_score(self, view: LayerView) -> torch.Tensor:
        q = view.queries
        t = view.n_tokens
        first = q.shape[1] - t                      # the re-read rows are the pass's last T rows
        step = max(1, (t - self.n_sink) // self.sampled_rows)
        at = torch.arange(self.n_sink, t - 1, step, device=q.device)
        attn = view.attention(q[:, first + at])    # (H_q, J, T): every context token is in the past
        rows = torch.arange(at.numel(), device=q.device)
        itself = attn[:, rows, at].mean(dim=-1)
        after = attn[:, rows, at + 1].mean(dim=-1)
        return view.group(torch.maximum(itself, after), "max")    # (H_kv,)

    def _sizes(self, view: LayerView, lengths: list[int], desks: torch.Tensor) -> list[int]:
        total = min(view.budget * len(lengths), sum(lengths))
        short = min(view.budget, max(8, int(self.lane * view.budget)) + self.n_sink + 1)
        sizes = [min(n, short) for n in lengths]
        ids = desks.tolist()
        spare = total - sum(s for h, s in enumerate(sizes) if h not in ids)
        for i, h in enumerate(ids):
            share = spare // (len(ids) - i)
            sizes[h] = max(0, min(lengths[h], share))
            spare -= sizes[h]
        return sizes

    def select(self, view: LayerView) -> Keep | Rewrite:
        t = view.n_tokens
        if view.queries is None or view.queries.shape[1] < t or t <= self.n_sink + 2 or view.budget >= t:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._copy_score(view)
        n_desk = max(1, round(view.n_kv_heads * self.desk_share))
        desks = score.topk(n_desk).indices
        valid = view.valid_mask()
        lengths = [int(x) for x in valid.sum(dim=1)]
        sizes = self._sizes(view, lengths, desks)
        keys, values, positions = [], [], []
        for h, size in enumerate(sizes):
            idx = torch.nonzero(valid[h]).flatten()
            k, v, p = view.keys[h, idx], view.values[h, idx], view.positions[h, idx]
            if size >= idx.numel():
                keys.append(k)
                values.append(v)
                positions.append(p)
                continue
            if size == 0:
                keys.append(k[:0])
                values.append(v[:0])
                positions.append(p[:0])
                continue
            head = min(self.n_sink, size - 1)
            tail = size - head - 1
            gone = slice(head, idx.numel() - tail)
            keep = torch.cat([torch.arange(head), torch.arange(idx.numel() - tail, idx.numel())]).to(idx.device)
            slot_k = k[gone].float().mean(dim=0, keepdim=True).to(k.dtype)
            slot_v = v[gone].float().mean(dim=0, keepdim=True).to(v.dtype)
            slot_p = p[gone][-1:]
            keys.append(torch.cat([k[keep[:head]], slot_k, k[keep[head:]]]))
            values.append(torch.cat([v[keep[:head]], slot_v, v[keep[head:]]]))
            positions.append(torch.cat([p[keep[:head]], slot_p, p[keep[head:]]]))
        return Rewrite(tuple(keys), tuple(values), tuple(positions))
