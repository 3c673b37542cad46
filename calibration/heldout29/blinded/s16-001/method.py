"""WeightedKV (Yuan et al., ICASSP 2025, arXiv 2503.01330), ported to board C's block evictions.

WeightedKV evicts by average attention and treats keys and values differently: the keys of unimportant tokens are
dropped, but their values are folded into neighbouring retained tokens by a weighted average whose weights are the
tokens' average attention scores, so the information they carried is not lost entirely.

This port: each token's attention is accumulated over the decoded queries together with the number of queries that
could see it (carried across evictions by position); average attention = sum / count. At each eviction a head keeps
its newest ``n_recent`` tokens and the rest of its budget by average attention. Every dropped token's value goes to
the nearest retained token after it (before it, if none follows), and a retained token's new value is the average of
its own value and the values folded into it, weighted by average attention. Keys of dropped tokens are discarded;
retained keys and positions are unchanged.

Deviations (mine): the paper evicts one token per generation step, here a block is evicted whenever the harness asks
(one eighth of the cap); the neighbour rule (next retained token) and the recent window of 8 are my choices; a
retained token's accumulated attention is not updated after it absorbs values.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite
from harness.api import reference_attention


class WeightedKVPort(EvictionMethod):
    name = "weightedkv_port"
    query_window = 64
    n_recent = 8

    def _average_attention(self, view: LayerView) -> torch.Tensor:
        total, seen = view.recall("wkv_sum"), view.recall("wkv_count")
        if view.queries is not None and view.query_positions is not None:
            fresh = view.query_positions > view.state.get("wkv_last", -1)
            if bool(fresh.any()):
                qpos = view.query_positions[fresh]
                window = view.model.sliding_window if view.layer in view.model.sliding_layers else None
                got = reference_attention(view.queries[:, fresh], view.keys, view.positions, qpos,
                                          view.model.group_size, view.valid, scale=view.model.scale,
                                          window=window, reduce="sum")
                total = total + view.group(got, "mean")
                seen = seen + (qpos.view(1, 1, -1) >= view.positions.unsqueeze(-1)).sum(-1).float()
                view.state["wkv_last"] = int(view.query_positions.max())
        view.remember("wkv_sum", total)
        view.remember("wkv_count", seen)
        return total / seen.clamp_min(1.0)

    def select(self, view: LayerView) -> Rewrite:
        avg = self._average_attention(view)
        valid = view.valid_mask()
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            live = torch.nonzero(valid[h]).flatten()
            n = int(live.numel())
            a = avg[h, live]
            rank = a.clone()
            rank[max(0, n - self.n_recent):] = float("inf")
            keep = rank.topk(min(view.budget, n)).indices.sort().values
            keys, values = view.keys[h, live], view.values[h, live].float()
            new_values = values[keep].clone()
            if keep.numel() < n and keep.numel():
                dropped = torch.ones(n, dtype=torch.bool)
                dropped[keep] = False
                gone = torch.nonzero(dropped).flatten()
                after = torch.searchsorted(keep, gone).clamp(max=keep.numel() - 1)   # next retained (or last)
                w_keep = a[keep].clamp_min(1e-9)
                w_gone = a[gone].clamp_min(1e-9)
                acc = new_values * w_keep[:, None]
                acc.index_put_((after,), values[gone] * w_gone[:, None], accumulate=True)
                mass = w_keep.clone().index_put_((after,), w_gone, accumulate=True)
                new_values = acc / mass[:, None]
            ks.append(keys[keep])
            vs.append(new_values)
            ps.append(view.positions[h, live][keep].long())
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
