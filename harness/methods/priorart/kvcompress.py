"""KV-Compress (Rehg, 2024, arXiv 2410.00161): paged eviction with variable rates per KV head. Each KV pair's
metric is the squared attention (L2 aggregation) of the observation-window queries, summed over the GQA group;
each head's tokens are sorted by metric and cut, in that order, into blocks of the page size; the blocks are
ranked across all the layer's heads by their summed metric and evicted cheapest first, so each head evicts a
whole number of pages and heads end with different lengths. The most recent tokens are protected. Defaults from
memory of the paper/vLLM fork (page 16, observation window 32, protected window 50, L2-sum, no pooling); they
could not be checked against the code. Cross-layer ranking (the paper sorts over all layers) is per layer here.
Settings: pa_kvcompress; pa_kvcompress?block_size=32; pa_kvcompress?protected=32&query_window=8; pa_kvcompress?squared=False"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class KVCompress(EvictionMethod):
    name = "pa_kvcompress"
    paper: ClassVar[str] = "KV-Compress"
    query_window = 32
    block_size = 16
    protected = 50
    squared = True  # L2 aggregation over the window queries; False = plain sum

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()  # (H_q, w, T)
        metric = view.group((attn * attn if self.squared else attn).sum(dim=1), "sum").double()
        valid = view.valid_mask()
        newest = view.positions.masked_fill(~valid, -1).amax(dim=1, keepdim=True)
        metric = metric.masked_fill(view.positions > newest - self.protected, float("inf"))
        h, t, b = view.n_kv_heads, view.n_tokens, self.block_size
        order = metric.masked_fill(~valid, float("nan")).argsort(dim=1)  # ascending; padding (nan) last
        costs, sizes, heads = [], [], []
        for i in range(h):
            n = int(valid[i].sum())
            m = metric[i, order[i, :n]]
            blocks = [m[j: j + b] for j in range(0, n, b)]
            c = torch.stack([x.sum() for x in blocks]).cummax(dim=0).values if blocks else m
            costs.append(c)
            sizes.append(torch.tensor([len(x) for x in blocks], dtype=torch.long))
            heads.append(torch.full((len(blocks),), i, dtype=torch.long))
        cost, size, head = torch.cat(costs).cpu(), torch.cat(sizes), torch.cat(heads)
        need = int(valid.sum()) - view.budget * h
        rank = torch.argsort(cost, stable=True)  # cummax keeps each head's blocks in sorted order
        evicted = torch.zeros(h, dtype=torch.long)
        done = 0
        for r in rank.tolist():
            if done >= need:
                break
            evicted[head[r]] += size[r]
            done += int(size[r])
        return Keep(tuple(order[i, int(evicted[i]): int(valid[i].sum())].sort().values for i in range(h)))
