"""Stratified window attention (board B_online).

On board B the closing rows of the context decide what survives, and they favour what is near them: the end of a long
document wins most of the budget and the questions asked later may point anywhere. We cut the context into equal
position strata and give each stratum a quota that grows only with the square root of the attention mass it
receives; within a stratum, the usual window-attention ranking decides.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class StratifiedWindow(EvictionMethod):
    name = "stratified_window"
    query_window = 32
    strata = 8

    def _quotas(self, mass: torch.Tensor, total: int, sizes: list[int]) -> list[int]:
        share = mass.clamp_min(0).sqrt()
        share = share / share.sum().clamp_min(1e-12)
        raw = [min(s, int(math.floor(float(w) * total))) for w, s in zip(share, sizes)]
        spare = total - sum(raw)
        order = share.argsort(descending=True).tolist()
        while spare > 0 and any(r < s for r, s in zip(raw, sizes)):
            for i in order:
                if spare == 0:
                    break
                if raw[i] < sizes[i]:
                    raw[i] += 1
                    spare -= 1
        return raw

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)
        window_start = view.query_positions.min()
        valid = view.valid_mask()
        chosen = []
        for h in range(view.n_kv_heads):
            real = valid[h].nonzero().squeeze(-1)
            window = real[view.positions[h, real] >= window_start]
            body = real[view.positions[h, real] < window_start]
            room = max(0, view.budget - window.numel())
            if room == 0 or body.numel() == 0:
                chosen.append(window[-view.budget:] if view.budget > 0 else window[:0])
                continue
            pieces = list(torch.tensor_split(body, min(self.strata, body.numel())))
            mass = torch.stack([attn[h, p].sum() for p in pieces])
            quotas = self._quotas(mass, room, [p.numel() for p in pieces])
            picked = [p[attn[h, p].topk(q).indices] for p, q in zip(pieces, quotas) if q > 0]
            chosen.append(torch.cat(picked + [window]).sort().values)
        return Keep(tuple(chosen))
