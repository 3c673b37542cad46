"""Ledger Heads: head shares sized by how many tokens each head really reads, plus one pooled slot per head
that stands in for everything the head lets go.

A pass that re-reads the context gives every token a weight per KV head (the largest it receives over the pass,
max over the head's query heads). A head's share of the layer's budget is proportional to its reach: how many
tokens it takes to cover 90 % of its total weight (a focused head needs few, a broad one many), at least 2 per
head. Each head keeps its top (share - 1) tokens, and folds all the others into one pooled entry: value and
(position-free) key are their weight-averaged means, and the entry sits at the position of the heaviest dropped
token, its key rotated back to that position. Nothing is tuned.
"""

import torch

from harness import EvictionMethod, Keep, LayerView, Rewrite


def _reach(w: torch.Tensor, share: float = 0.9) -> int:
    srt = w.sort(descending=True).values
    cum = srt.cumsum(0)
    return int((cum < share * cum[-1]).sum()) + 1


class LedgerHeads(EvictionMethod):
    name = "ledger_heads"
    reconstruction_queries = True

    def _weights(self, view: LayerView) -> torch.Tensor:
        best = torch.zeros(view.queries.shape[0], view.n_tokens, device=view.keys.device)
        for s in range(0, view.queries.shape[1], 128):
            best = torch.maximum(best, view.attention(view.queries[:, s:s + 128]).amax(dim=1))
        return view.group(best, "max") * view.valid_mask()

    def _shares(self, w: torch.Tensor, total: int, counts: torch.Tensor) -> list[int]:
        reach = torch.tensor([float(_reach(w[h, : int(counts[h])])) for h in range(w.shape[0])])
        raw = reach / reach.sum() * total
        shares = raw.floor().long().clamp(min=2)
        shares = torch.minimum(shares, counts.cpu())
        while int(shares.sum()) > total:
            shares[int(shares.argmax())] -= 1
        spare = total - int(shares.sum())
        order = (raw - raw.floor()).argsort(descending=True)
        for h in order.tolist():
            if spare <= 0:
                break
            if shares[h] < counts[h]:
                shares[h] += 1
                spare -= 1
        return shares.tolist()

    def select(self, view: LayerView) -> Keep | Rewrite:
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        total = view.budget * view.n_kv_heads
        if view.budget >= view.n_tokens or view.queries is None or total < 2 * view.n_kv_heads:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        w = self._weights(view)
        shares = self._shares(w, total, counts)
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            wh, kh, vh, ph = w[h, :n], view.keys[h, :n], view.values[h, :n], view.positions[h, :n]
            keep_n = shares[h] - 1 if shares[h] < n else n
            mask = torch.zeros(n, dtype=torch.bool, device=wh.device)
            mask[wh.topk(keep_n).indices] = True
            out_k, out_v, out_p = kh[mask], vh[mask], ph[mask]
            gone = ~mask
            if bool(gone.any()):
                gw = wh[gone].float() + 1e-12
                gw = gw / gw.sum()
                at = ph[gone][int(gw.argmax())]
                flat = kh[gone].float()
                if view.rope is not None:
                    flat = view.rope.apply(flat, -ph[gone])
                pk = (gw[:, None] * flat).sum(0, keepdim=True)
                if view.rope is not None:
                    pk = view.rope.apply(pk, at.reshape(1))
                pv = (gw[:, None] * vh[gone].float()).sum(0, keepdim=True)
                out_k = torch.cat([out_k, pk.to(kh.dtype)])
                out_v = torch.cat([out_v, pv.to(vh.dtype)])
                out_p = torch.cat([out_p, at.reshape(1)])
                order = out_p.argsort()
                out_k, out_v, out_p = out_k[order], out_v[order], out_p[order]
            ks.append(out_k)
            vs.append(out_v)
            ps.append(out_p)
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
