"""Anchor-digest retention (board B_online)."""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class _Digest:
    """Summary of one head's cache in spans of `width` tokens."""

    def __init__(self, keys: torch.Tensor, width: int):
        n, d = keys.shape
        self.width = width
        self.n = n
        pad = (-n) % width
        k = torch.cat([keys, keys[-1:].expand(pad, d)]) if pad else keys
        self.spans = k.view(-1, width, d)                     # (S, w, d)
        self.anchor = self.spans.mean(dim=1)                  # (S, d)

    def coherence(self) -> torch.Tensor:
        """Lowest cosine of a span's members with its anchor: low = the anchor misrepresents the span."""
        a = self.anchor / self.anchor.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        m = self.spans / self.spans.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        return torch.einsum("swd,sd->sw", m, a).amin(dim=1)


class AnchorDigest(EvictionMethod):
    name = "anchor_digest"
    query_window = 32
    width = 8
    irregular_share = 0.125

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        scale = view.model.scale
        g = view.model.group_size
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            n = idx.numel()
            if view.budget >= n or view.queries is None:
                out.append(idx[-view.budget:] if view.budget < n else idx)
                continue
            pos = view.positions[h, idx]
            w0 = int(view.query_positions.min())
            recent = pos >= w0
            older = idx[~recent]
            room = view.budget - int(recent.sum())
            if room <= 0 or older.numel() == 0:
                out.append(idx[recent][-view.budget:])
                continue
            dig = _Digest(view.keys[h, older].float(), self.width)
            n_spans = dig.anchor.shape[0]
            q = view.queries[h * g:(h + 1) * g].float()      # (g, W, d)
            logits = torch.einsum("gwd,sd->gws", q, dig.anchor) * scale
            probs = torch.exp(logits - torch.logsumexp(logits, dim=-1, keepdim=True))
            span_score = probs.sum(dim=1).amax(dim=0)        # (S,)
            n_keep = max(1, math.ceil(room / self.width))
            n_irr = min(n_spans, int(n_keep * self.irregular_share))
            order_irr = torch.argsort(dig.coherence())[:n_irr]
            span_score[order_irr] = float("inf")
            order = torch.argsort(span_score, descending=True)
            chosen = []
            left = room
            for s in order.tolist():
                if left <= 0:
                    break
                lo, hi = s * self.width, min((s + 1) * self.width, older.numel())
                take = older[lo:hi][:left]
                chosen.append(take)
                left -= take.numel()
            kept = torch.cat(chosen + [idx[recent]])
            out.append(kept.sort().values)
        return Keep(tuple(out))
