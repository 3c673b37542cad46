"""ZipVL's attention-recall allocation as question-aware eviction (board A): a credited port.

ZipVL (He et al., 2024, arXiv 2410.08584) decides how many tokens are important by the attention distribution
itself: with normalised attention scores (attention accumulated over probe queries, divided by the number of
probe queries that can see each token), the important set is the smallest top set whose scores reach a fraction
tau of the total (tau = 0.975 here); the rest are treated as unimportant (ZipVL quantises them to low bits
in the KV cache and skips them in sparse attention prefill).

Ported training-free to this interface: the probe queries are the question span and the closing 32 prompt rows;
the layer's budget is fixed by the arena, so the recall rule is applied across the KV heads of a layer: each
head's need n_h (tokens to reach tau) sets its share of the layer's budget (ragged heads, each head at most twice
the mean budget). Deviations: the unimportant tokens are evicted, not quantised; ZipVL's ratio is per layer and
free, here only its split across heads is adaptive; no sparse prefill.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ZipVLRecall(EvictionMethod):
    name = "zipvl_recall"
    query_window = 32
    question_queries = True
    tau = 0.975

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        acc = view.group(view.attention(reduce="sum"), "mean")
        seen = (view.query_positions[None, None, :] >= view.positions[:, :, None]).sum(-1).clamp_min(1)
        norm = (acc / seen).masked_fill(~valid, 0.0)
        srt = norm.sort(dim=1, descending=True).values
        cum = srt.cumsum(1) / srt.sum(1, keepdim=True).clamp_min(1e-12)
        need = (cum < self.tau).sum(1) + 1  # (H_kv,)
        total = view.budget * view.n_kv_heads
        cap = torch.minimum(valid.sum(1), torch.full_like(need, 2 * view.budget))
        alloc = torch.minimum(cap, (need.float() / need.sum() * total).floor().long())
        spare = total - int(alloc.sum())
        for h in need.argsort(descending=True).tolist():  # leftovers to the neediest heads
            add = min(spare, int(cap[h] - alloc[h]))
            alloc[h] += add
            spare -= add
        closing = view.positions >= int(view.query_positions.min())
        score = norm.masked_fill(closing & valid, float("inf"))
        return Keep.from_topk(score, alloc, view.valid)
