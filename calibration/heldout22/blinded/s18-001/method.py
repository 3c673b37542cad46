"""Envelope triage (board A, question-aware prefill).

Rather than scoring tokens one by one, the context is cut into fixed-size slabs and each slab is summarised by its
channel-wise envelope (the largest and the smallest value of every key channel). The question's rows are
summarised the same way, and a slab's urgency is the larger of the two envelope-to-envelope products, so a slab
with even one strongly aligned token stands out. Urgency is blended with the previous layer's (slab urgency is
persistent across depth), and whole slabs are kept in order of urgency; whatever room is left goes to the newest
tokens.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _envelope(x: torch.Tensor, ok: torch.Tensor, width: int):
    """x (T, D) -> (hi, lo) per slab of ``width`` rows, (S, D) each; padding never wins."""
    t, d = x.shape
    pad = (-t) % width
    big = torch.finfo(torch.float32).max
    hi_src = x.masked_fill(~ok[:, None], -big)
    lo_src = x.masked_fill(~ok[:, None], big)
    if pad:
        hi_src = torch.cat([hi_src, hi_src.new_full((pad, d), -big)])
        lo_src = torch.cat([lo_src, lo_src.new_full((pad, d), big)])
    return hi_src.view(-1, width, d).amax(1), lo_src.view(-1, width, d).amin(1)


class EnvelopeTriage(EvictionMethod):
    name = "envelope_triage"
    query_window = 16
    question_queries = True
    slab = 64
    carry = 0.3          # weight of the previous layer's urgency

    def setup(self, model) -> None:
        self._prev: dict[tuple, torch.Tensor] = {}

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.model.attention_layers and view.layer == view.model.attention_layers[0]:
            self._prev = {}
        ok = view.valid_mask()
        g = view.model.group_size
        whole = view.budget // self.slab            # slabs that fit whole
        rows = []
        for h in range(view.n_kv_heads):
            n = int(ok[h].sum())
            s = view.positions[h].float() * 1e-9     # recency fills what the slabs leave
            if whole > 0:
                k = view.keys[h].float()
                khi, klo = _envelope(k, ok[h], self.slab)
                q = view.queries[h * g:(h + 1) * g].float().reshape(-1, k.shape[-1])
                qhi, qlo = q.amax(0), q.amin(0)
                urg = torch.maximum(khi @ qhi, klo @ qlo)
                key = (h, urg.shape[0])
                prev = getattr(self, "_prev", {}).get(key)
                if prev is not None:
                    urg = (1 - self.carry) * urg + self.carry * prev
                self._prev[key] = urg
                chosen = urg.topk(min(whole, urg.shape[0])).indices
                in_slab = torch.zeros(urg.shape[0], dtype=torch.bool, device=k.device)
                in_slab[chosen] = True
                slab_of = torch.arange(view.n_tokens, device=k.device) // self.slab
                s = torch.where(in_slab[slab_of], s + 1.0, s)
            rows.append(s)
        return Keep.from_topk(torch.stack(rows), view.budget, view.valid)
