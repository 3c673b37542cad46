"""Digest-slot retention (board B_offline).

Eviction keeps the tokens a reader needs most and loses the rest entirely. We keep a few "digest" entries per head
next to the selected tokens: each digest is what a broad reader of the whole context would take away from it, a
single key/value pair formed by attention over the full, uncompressed cache. The broad readers are the queries of
the repeat pass with the highest attention entropy (the ones that spread their reading over the most tokens); a
digest's key and value are their attention-weighted means of the full cache's keys and values, placed at the
attention-weighted mean position. The other entries are chosen by the largest attention any repeat-pass query pays
them (max over the group). One digest per 16 budget entries.
"""

import torch

from harness import EvictionMethod, Keep, LayerView, Rewrite

PER_DIGEST = 16
SINKS = 4


class DigestSlots(EvictionMethod):
    name = "digest_slots"
    reconstruction_queries = True

    def select(self, view: LayerView):
        t = view.n_tokens
        if view.budget >= t or view.queries is None or view.valid is not None or view.budget < PER_DIGEST:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        n_dig = max(1, view.budget // PER_DIGEST)
        probs = view.attention(view.queries)                                # (H_q, N, T), full context visible
        peak = view.group(probs.amax(dim=1), "max")                        # (H_kv, T)
        ent = -(probs.clamp_min(1e-12).log() * probs).sum(-1)              # (H_q, N)
        g = view.model.group_size
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            rows = probs[h * g:(h + 1) * g].reshape(-1, t)                  # (g*N, T)
            broad = ent[h * g:(h + 1) * g].reshape(-1).topk(min(n_dig, rows.shape[0])).indices
            w = rows[broad]                                                # (n_dig, T)
            k_full, v_full = view.keys[h].float(), view.values[h].float()
            dk, dv = w @ k_full, w @ v_full
            dp = (w * view.positions[h].float()).sum(-1).round().long()
            sc = peak[h].clone()
            sc[:SINKS] = float("inf")
            kept = sc.topk(view.budget - w.shape[0]).indices
            pos = torch.cat([view.positions[h][kept], dp])
            order = pos.argsort(stable=True)
            ks.append(torch.cat([k_full[kept], dk])[order].to(view.keys.dtype))
            vs.append(torch.cat([v_full[kept], dv])[order].to(view.values.dtype))
            ps.append(pos[order])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
