"""Loki (Singhania et al., 2024, arXiv 2406.02542), ported to board C as a decode-time eviction rule.

Credit: the scoring is Loki's, not mine. Loki observes that attention keys live in a low-dimensional subspace,
projects queries and keys onto their top principal components, computes approximate attention scores in that
reduced space, and keeps the top-k keys (then attends exactly over them).

What the port changes, stated:
- Loki computes the principal components offline on a calibration set; the harness has none, so here they come
  from the layer's own cached keys at each call (eigenvectors of the keys' second-moment matrix per KV head,
  top 16 of 64 dimensions).
- Loki selects keys afresh for every decoded token and evicts nothing; the harness asks for a permanent
  eviction once per block, so the selection is made from the newest 16 queries (approximate attention summed
  over them, maxed over a KV head's query heads) and dropped tokens do not come back.
- The newest 8 tokens are always kept (Loki's per-step selection would see them; a block eviction cannot).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class LokiEviction(EvictionMethod):
    name = "loki_eviction"
    query_window = 16
    rank = 16
    keep_newest = 8

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        keys = view.keys.float() * valid[..., None]                         # padding contributes nothing
        second = keys.transpose(1, 2) @ keys                                # (H_kv, D, D)
        _, vecs = torch.linalg.eigh(second)
        basis = vecs[..., -self.rank:]                                      # top principal directions
        k_low = keys @ basis                                                # (H_kv, T, r)
        g = view.model.group_size
        q = view.queries.float()
        q_low = torch.einsum("hnd,hdr->hnr", q, basis.repeat_interleave(g, dim=0))  # (H_q, N, r)
        logits = torch.einsum("hnr,htr->hnt", q_low, k_low.repeat_interleave(g, dim=0)) * view.model.scale
        assert view.query_positions is not None
        hide = view.positions.repeat_interleave(g, dim=0)[:, None, :] > view.query_positions[None, :, None]
        hide = hide | ~valid.repeat_interleave(g, dim=0)[:, None, :]
        approx = logits.masked_fill(hide, float("-inf")).softmax(dim=-1).nan_to_num(0.0)
        scores = view.group(approx.sum(dim=1), "max")
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - self.keep_newest): n] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
