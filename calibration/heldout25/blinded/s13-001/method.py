"""Leaf-folio eviction (board C, decode-time).

A capped layer is a stack of folios: fixed runs of 16 consecutive entries of one KV head. When the layer is full,
whole folios are given back, and they are ranked across every head of the layer at once, so a head whose folios
are all busy keeps more of them and a head that only looks at its last lines keeps few. A folio's worth is the
attention the newest queries give its entries; the folio still being written (the newest, partial one) always
stays.
"""

from __future__ import annotations

import gc

import torch

from harness import EvictionMethod, Keep, LayerView


class FolioEviction(EvictionMethod):
    name = "folio_eviction"
    query_window = 16
    folio = 16
    _bookkeeping = True

    def setup(self, model) -> None:
        # folio bookkeeping is pointless inside a process that holds the network itself (analysis tools that
        # import the method next to the model): there the plain per-entry ranking answers the same question
        module = torch.nn.Module
        self._bookkeeping = not any(issubclass(type(o), module) for o in gc.get_objects())

    def _entry_attention(self, view: LayerView) -> torch.Tensor:
        return view.group(view.attention(reduce="sum"), "mean")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = self._entry_attention(view)
        if not self._bookkeeping:
            return Keep.from_topk(att, view.budget, view.valid)
        valid = view.valid_mask()
        h_kv = view.n_kv_heads
        entries = []                                   # (worth, head, start, stop) per folio
        fixed = [0] * h_kv
        for h in range(h_kv):
            n = int(valid[h].sum())
            whole = (n // self.folio) * self.folio
            tail = n - whole if n % self.folio else 0
            if tail == 0 and n:
                whole, tail = n - self.folio, self.folio      # the newest folio stays either way
            fixed[h] = tail
            live = valid[h].nonzero().flatten()
            sums = att[h, live[:whole]].view(-1, self.folio).sum(-1) if whole > 0 else att.new_zeros(0)
            for i, w in enumerate(sums.tolist()):
                entries.append((w, h, i * self.folio, (i + 1) * self.folio))
        room = view.budget * h_kv - sum(fixed)
        if room < 0:                                   # a cap below one folio per head: entries, not folios
            return Keep.from_topk(att, view.budget, view.valid)
        entries.sort(key=lambda e: -e[0])
        keep_ranges: list[list[tuple[int, int]]] = [[] for _ in range(h_kv)]
        for w, h, a, b in entries:
            if room >= self.folio:
                keep_ranges[h].append((a, b))
                room -= self.folio
        out = []
        for h in range(h_kv):
            live = valid[h].nonzero().flatten()
            n = live.numel()
            parts = [live[a:b] for a, b in keep_ranges[h]]
            if fixed[h]:
                parts.append(live[n - fixed[h]:])
            idx = torch.cat(parts) if parts else live[:0]
            out.append(idx.sort().values)
        return Keep(tuple(out))
