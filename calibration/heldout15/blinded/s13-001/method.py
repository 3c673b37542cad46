"""Baseline-subtracted question relevance (board A, question-aware prefill).

Raw attention mixes two things: what the question is looking for, and what the model attends to no matter what is
asked (opening tokens, delimiters, the last few lines). Ranking by raw attention keeps the second kind as eagerly as
the first. We estimate the second kind from rows that carry no question content and subtract it.

- Asking rows: the closing 32 prompt rows (the question and the instruction around it). Reference rows: the 64 rows
  before them, the end of the context, which read the same material with no question in view.
- For every token: the asking rows' mean attention minus the reference rows' mean attention (each causal, averaged
  over the KV head's query heads); tokens whose reference attention is extreme (above mean + 3 standard deviations:
  attention sinks, separators) are set aside rather than trusted either way.
- Tokens are grouped into passages of 16; a passage's relevance is the sum of its tokens' differences; passages are
  kept whole in order of relevance, and what is left of the budget goes to single tokens by their difference.
- The asking rows and four opening tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class BaselineSubtracted(EvictionMethod):
    name = "baseline_subtracted"
    query_window = 96
    asking = 32
    passage = 16
    opening = 4

    def _rows(self, view: LayerView, rows: torch.Tensor) -> torch.Tensor:
        q = view.queries[:, rows]
        qpos = view.query_positions[rows]
        attn = view.attention(q)  # (H_q, r, T), no mask yet
        seen = view.positions[:, None, :] <= qpos[None, :, None]  # (H_kv, r, T)
        g = view.model.group_size
        attn = attn * seen.repeat_interleave(g, dim=0)
        attn = attn / attn.sum(-1, keepdim=True).clamp_min(1e-12)
        return view.group(attn.mean(dim=1), "mean")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        order = view.query_positions.argsort()
        ask_rows = order[-self.asking:]
        ref_rows = order[:-self.asking]
        asked = self._rows(view, ask_rows)
        ref = self._rows(view, ref_rows) if ref_rows.numel() else torch.zeros_like(asked)
        diff = asked - ref
        mu, sd = ref.mean(dim=-1, keepdim=True), ref.std(dim=-1, keepdim=True)
        diff = diff.masked_fill(ref > mu + 3 * sd, 0.0)
        ask_from = int(view.query_positions[ask_rows].min())
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            pos = view.positions[h, :n]
            keep = (pos < self.opening) | (pos >= ask_from)
            left = view.budget - int(keep.sum())
            d = diff[h, :n]
            if left >= self.passage:
                n_pass = -(-n // self.passage)
                sums = torch.zeros(n_pass * self.passage)
                sums[:n] = d.masked_fill(keep, 0.0)
                rank = sums.view(n_pass, self.passage).sum(1).argsort(descending=True)
                for j in rank.tolist():
                    lo, hi = j * self.passage, min(n, (j + 1) * self.passage)
                    new = int((~keep[lo:hi]).sum())
                    if new > left:
                        break
                    keep[lo:hi] = True
                    left -= new
            if left > 0:
                s = d.masked_fill(keep, float("-inf"))
                keep[s.topk(min(left, int((~keep).sum()))).indices] = True
            idx = torch.nonzero(keep).flatten()
            out.append(idx[-view.budget:] if idx.numel() > view.budget else idx)
        return Keep(tuple(out))
