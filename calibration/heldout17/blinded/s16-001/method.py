"""A port of MorphKV (Ghadia et al., 2025, "Dialogue Without Limits: Constant-Sized KV Caches for Extended Responses
in LLMs", ICML 2025, arXiv 2503.00979) to board C. This is a port, not a new method.

MorphKV keeps a constant-size cache made of the most recent R tokens plus older tokens chosen by how strongly the
recent window's queries attend to them ("correlation with the recent tokens"). It has two fusion variants for the
recent window's attention: sum and max; this port uses max-fusion (each older token scored by the largest attention
any of the recent queries pays it), then the maximum over each KV head's query heads.

Deviations from the paper: (1) MorphKV re-selects at every decode step; the harness asks only when a layer reaches
its cap and gives back a block (an eighth of the cap), so the selection happens once per block; (2) the recent window
is R = 32 tokens for both the queries and the always-kept tail; (3) the 4 opening tokens are also always kept (an
attention-sink safeguard that MorphKV does not need at its budgets); (4) group aggregation over GQA query heads is our
choice (max).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class MorphKVPort(EvictionMethod):
    name = "morphkv_port"
    recent = 32
    query_window = 32
    opening = 4

    def on_decode(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        fused = view.group(view.attention(reduce="max").float(), "max")  # (H_kv, T) max-fusion
        newest = view.positions.masked_fill(~view.valid_mask(), -1).amax(dim=-1, keepdim=True)
        keep_always = (view.positions > newest - self.recent) | (view.positions < self.opening)
        return Keep.from_topk(fused.masked_fill(keep_always, float("inf")), view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        return self.on_decode(view)
