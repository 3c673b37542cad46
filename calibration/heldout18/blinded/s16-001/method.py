"""A port of MorphKV (Ghadia et al., 2025, arXiv 2503.00979), "Dialogue Without Limits: Constant-Sized KV Caches for
Extended Responses in LLMs", to decode-time eviction on board C. This is a port, not a new method.

MorphKV keeps a constant-size cache: a window of the most recent tokens plus older tokens chosen by how strongly the
recent tokens' queries attend to them, re-selected as the response grows. As ported here: recent window R = 32
(the newest 32 queries are the judges and the newest 32 tokens are kept), each older token scored by the sum of the
judges' attention (the paper's "sum" fusion; it also describes "max"), summed over the KV head's query heads; top
older tokens fill the rest of the budget.

Deviations from the paper: (1) the harness asks once per block of steps when a layer reaches its cap, so re-selection
happens per block, not every step; (2) at prefill the same rule runs with the prompt's closing 32 queries; (3) the
selection is per KV head.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class MorphKVPort(EvictionMethod):
    name = "morphkv_port"
    query_window = 32
    recent = 32

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        judged = view.group(view.attention(reduce="sum"), "sum")  # (H_kv, T)
        newest = view.positions.masked_fill(~view.valid_mask(), -1).amax(dim=-1, keepdim=True)
        judged = judged.masked_fill(view.positions > newest - self.recent, float("inf"))
        return Keep.from_topk(judged, view.budget, view.valid)
