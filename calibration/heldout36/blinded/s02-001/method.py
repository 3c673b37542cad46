"""WindowKV port (Zuo et al., 2025, arXiv 2503.17922): keep semantically coherent windows of the context,
not scattered tokens.

WindowKV splits the context into consecutive windows, scores each window with the observation window's
attention, and keeps whole windows; the window size is task-adaptive (a classifier decides whether the
task needs localized retrieval or broad aggregation), and index selection is shared across groups of
layers to save compute. This port:

- scores windows of `window` tokens by the question's attention (board A hands over the question span and
  the last prompt positions; summed over queries, averaged over the group);
- stand-in for the task classifier: if the question's attention is concentrated (the top window holds more
  than `focus` of the mass) windows are small (8), else large (16);
- every layer selects its own windows (the cross-layer index sharing is dropped: the harness asks each
  layer separately and the sharing only saves compute);
- whole windows are kept in score order; the window cut by the budget is filled by token attention.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class WindowKVPort(EvictionMethod):
    name = "windowkv_port"
    query_window = 8
    question_queries = True
    focus = 0.3
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)
        t = view.n_tokens
        out = []
        for h in range(view.n_kv_heads):
            a = att[h]
            share16 = torch.nn.functional.pad(a, (0, (-t) % 16)).reshape(-1, 16).sum(-1)
            w = 8 if float(share16.max() / a.sum().clamp_min(1e-12)) > self.focus else 16
            wid = torch.arange(t) // w
            wscore = torch.zeros(int(wid.max()) + 1).index_add_(0, wid, a)
            wrank = wscore.argsort(descending=True).argsort()
            key = wrank[wid].float() - a / (a.max() + 1e-9)  # window order first, then token attention
            key = key.masked_fill(view.positions[h] < self.sinks, float("-inf"))
            key = key.masked_fill(view.positions[h] >= view.query_positions.min(), float("-inf"))
            out.append(torch.topk(-key, view.budget).indices.sort().values)
        return Keep(tuple(out))
