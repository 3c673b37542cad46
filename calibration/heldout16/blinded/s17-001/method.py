"""Energon's multi-round filtering as decode-time eviction (board C).

Port of the mix-precision multi-round filtering of Energon (Zhou et al., "Energon: Towards Efficient Acceleration of
Transformers Using Dynamic Sparse Attention", 2021, arXiv 2110.09310): candidate keys are filtered in
rounds of increasing precision, each round computing the query-key scores with quantized operands and dropping the
keys whose score falls below the round's mean; only the survivors are scored at full precision. Training-free port;
deviations, stated:

- Energon filters per query for one attention computation; here the filter decides what stays in the cache when a
  layer is full, with the scores averaged over the newest 8 queries and the query heads of the KV head.
- Two rounds, at 2 and 4 bits (symmetric, one scale per tensor); the bit widths and the mean threshold are our
  choices for this setting.
- The cache keeps the full-precision survivors ranked by their attention (max over the 8 queries and the group);
  if fewer survive than the budget, round-1 survivors follow by their 4-bit score, then the rest by the 2-bit score.
- The newest 8 entries are always kept (the paper has no cache).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _fake_quant(x: torch.Tensor, bits: int) -> torch.Tensor:
    levels = 2 ** (bits - 1) - 1 if bits > 1 else 1
    scale = x.abs().amax().clamp_min(1e-8) / max(1, levels)
    return (x / scale).round().clamp(-levels - 1, levels) * scale


class EnergonFilter(EvictionMethod):
    name = "energon_filter"
    query_window = 8
    newest = 8

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        valid = view.valid_mask()
        q = view.queries.float()
        full = view.group(view.attention(reduce="max"), "max")  # (H_kv, T)
        scores = torch.full(view.keys.shape[:2], float("-inf"), device=view.keys.device)
        for h in range(view.n_kv_heads):
            m = valid[h]
            k = view.keys[h][m].float()
            qh = q[h * g:(h + 1) * g].reshape(-1, k.shape[1])
            s2 = (_fake_quant(qh, 2) @ _fake_quant(k, 2).T).mean(dim=0)
            pass1 = s2 >= s2.mean()
            s4 = (_fake_quant(qh, 4) @ _fake_quant(k, 4).T).mean(dim=0)
            pass2 = pass1 & (s4 >= s4[pass1].mean())
            n2 = lambda x: (x - x.min()) / (x.max() - x.min() + 1e-9)  # noqa: E731
            sc = n2(s2)
            sc = torch.where(pass1, 1.0 + n2(s4), sc)
            sc = torch.where(pass2, 2.0 + n2(full[h][m]), sc)
            n = int(m.sum())
            sc[max(0, n - self.newest):] = float("inf")
            scores[h][m] = sc
        return Keep.from_topk(scores, view.budget, view.valid)
