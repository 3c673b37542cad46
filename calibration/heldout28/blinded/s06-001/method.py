"""A port of SAGE-KV (Wang et al., 2025, "LLMs Know What to Drop: Self-Attention Guided KV Cache Eviction for
Efficient Long-Context Inference", arXiv 2503.08879) to the harness's decode-time board.

The paper's rule: after the prompt is read, take the attention of the last token, pick the top-k entries per
head from it (token level, then head level), keep the initial and the recent tokens as well, and decode with
that reduced cache. What differs here, and why:
* The harness caps each layer during generation, so the selection is repeated each time a layer fills up,
  with the newest query as "the last token", instead of once after the prompt.
* The head-level step is done per KV head: a KV head's score for an entry is the largest attention any of its
  query heads pays it (the paper works on query heads of a model without a shared KV cache).
* Sink and recent sizes (4 and 16) are mine, scaled to the small embedded model.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class SageKVPort(EvictionMethod):
    name = "sage_kv_port"
    query_window = 1
    n_initial = 4
    n_recent = 16

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        last = view.attention(view.queries[:, -1:])[:, 0]  # (H_q, T): the newest query only
        score = view.group(last, "max")
        order = torch.cumsum(valid.int(), dim=1)
        held = valid.sum(dim=1, keepdim=True)
        protect = (order <= self.n_initial) | (order > held - self.n_recent)
        score = score.masked_fill(protect & valid, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
