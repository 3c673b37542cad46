"""FastGen (Ge et al., ICLR 2024, arXiv 2310.01801, "Model Tells You What to Discard"): each head is profiled once
at the prompt and given the cheapest policy that still recovers a share ``recovery`` (T) of its attention:
special tokens, + punctuation, + frequent tokens (heavy hitters), + a local window, else the full cache. On this
interface token ids are not in the view (special tokens are the first ``n_sink`` positions, punctuation is
dropped) and the full cache is over budget, so per KV head: C1 = the sinks; C2 = C1 + the ``frequent_share`` of the
budget with the largest accumulated attention; C3 = C2 + the most recent tokens up to the budget. The profile is the
last ``query_window`` prompt queries (each sees the whole cache; the paper's map replays every prompt row); a
policy's recovery is the mean attention mass its tokens receive from those queries (the group's query heads
averaged); the first policy reaching T is kept, C3 otherwise (heads keep different numbers of tokens: C1 and C2 keep
fewer than the budget). Defaults assumed: T 0.95, frequent half of the budget, 4 sinks. Without queries: recency.
Settings: pa_fastgen; pa_fastgen?recovery=0.9; pa_fastgen?recovery=0.99; pa_fastgen?frequent_share=0.3
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class FastGen(EvictionMethod):
    name = "pa_fastgen"
    paper: ClassVar[str] = "FastGen"
    query_window = 64  # the profiling queries
    recovery = 0.95  # T
    frequent_share = 0.5
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.group(view.attention(), "mean")  # (H_kv, w, T): each profile row sums to 1
        mass = attn.mean(dim=1)  # (H_kv, T): the share of the profile's attention each token receives
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero()[:, 0]
            pos, m = view.positions[h, idx], mass[h, idx]
            k = min(view.budget, idx.numel())
            sinks = pos < self.n_sink
            c1 = sinks.clone()
            c2 = c1.clone()
            n_freq = max(0, min(k, int(k * self.frequent_share)) - int(c2.sum()))
            if n_freq:
                c2[m.masked_fill(c2, float("-inf")).topk(n_freq).indices] = True
            c3 = c2.clone()
            n_local = k - int(c3.sum())
            if n_local > 0:
                c3[pos.float().masked_fill(c3, float("-inf")).topk(n_local).indices] = True
            chosen = c3
            for c in (c1, c2):
                if int(c.sum()) <= k and float(m[c].sum()) >= self.recovery:
                    chosen = c
                    break
            out.append(idx[chosen].sort().values)
        return Keep(tuple(out))
