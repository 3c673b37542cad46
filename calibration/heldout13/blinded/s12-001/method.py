"""Bracket reduction (board B_offline).

A slow, one-off, query-agnostic compression that judges every part of the context locally before it competes
globally. The context is split into 2^L brackets (L = ceil(log2(T / budget))). In each round every bracket is
thinned by its own closing reader: the queries of the bracket's last 8 tokens read the bracket's surviving
tokens (softmax over that bracket only, causal), and the least-read tokens leave. Neighbouring brackets are then
joined pairwise, and the next round thins the joined brackets the same way, until one bracket, the whole
context, remains. Every round keeps the same share (budget / T)^(1/L) of each bracket, so the final size is the
budget.

Because a bracket is judged by its own end, a fact in the middle of the context is weighed against its
neighbours, not against the closing paragraphs. The four opening and the newest 16 tokens are always kept.
Uses every context query (the offline board allows a slow pass).
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class BracketReduction(EvictionMethod):
    name = "bracket_reduction"
    query_window = 1 << 20  # every context query
    readers = 8
    opening = 4
    newest = 16

    def _thin(self, keys, qs, qpos, kpos, members, keep_n, scale, g):
        """Keep keep_n of `members` (indices) by the attention of the bracket's last readers."""
        if keep_n >= members.numel():
            return members
        last = kpos[members].max()
        rows = ((qpos <= last) & (qpos >= last - self.readers + 1)).nonzero().flatten()
        if rows.numel() == 0:
            return members[-keep_n:]
        q = qs[:, rows]  # (g, r, D)
        k = keys[members]  # (m, D)
        logits = torch.einsum("grd,md->grm", q, k) * scale
        hide = kpos[members][None, None, :] > qpos[rows][None, :, None]
        probs = logits.masked_fill(hide, float("-inf")).softmax(dim=-1).nan_to_num(0.0)
        read = probs.sum(dim=(0, 1))
        fixed = (kpos[members] < self.opening) | (kpos[members] > kpos.max() - self.newest)
        read = read.masked_fill(fixed, float("inf"))
        return members[read.topk(keep_n).indices.sort().values]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        scale = view.model.scale
        valid = view.valid_mask()
        qpos = view.query_positions
        out = []
        for h in range(view.n_kv_heads):
            real = valid[h].nonzero().flatten()
            keys = view.keys[h, real].float()
            kpos = view.positions[h, real]
            n = keys.shape[0]
            if n <= view.budget:
                out.append(real)
                continue
            rounds = max(1, math.ceil(math.log2(n / max(1, view.budget))))
            share = (view.budget / n) ** (1.0 / rounds)
            qs = view.queries[h * g:(h + 1) * g].float()
            cuts = torch.linspace(0, n, 2 ** rounds + 1).round().long().tolist()
            brackets = [torch.arange(a, b, device=keys.device) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
            for r in range(rounds):
                brackets = [self._thin(keys, qs, qpos, kpos, b, max(1, round(b.numel() * share)), scale, g)
                            for b in brackets]
                if r < rounds - 1:
                    brackets = [torch.cat(brackets[i:i + 2]) for i in range(0, len(brackets), 2)]
            survivors = torch.cat(brackets)
            if survivors.numel() > view.budget:
                survivors = self._thin(keys, qs, qpos, kpos, survivors, view.budget, scale, g)
            out.append(real[survivors.sort().values])
        return Keep(tuple(out))
