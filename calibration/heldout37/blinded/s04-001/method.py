"""RetrievalAttention (Liu et al., 2024, arXiv 2409.10516), ported to one-shot decode-time eviction on board C.

The paper keeps a static set of initial and recent tokens on the GPU and, at every decoding step, retrieves the
keys each query would attend to most from an approximate-nearest-neighbour index over the CPU-offloaded rest
(an index built to cope with the gap between the query and key distributions). This port is not that system:
there is no offload and no index. When a layer reaches its cap, each of the newest queries retrieves its exact
top-r keys by attention (a stand-in for the ANN search), a token is ranked by how many (query head, query)
pairs retrieved it (ties by its best attention), and the static initial and recent tokens are always kept.
What is evicted is gone, where the paper could still retrieve it later."""

import torch

from harness import EvictionMethod, Keep, LayerView


class RetrievalAttentionPort(EvictionMethod):
    name = "retrieval_attention_port"
    query_window = 32
    initial = 4
    recent = 32

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        probs = view.attention()                                   # (H_q, N, T), causal, padding 0
        t = probs.shape[-1]
        r = max(4, min(t, view.budget // 8))                       # keys retrieved per query
        top = probs.topk(r, dim=-1)
        hits = torch.zeros_like(probs).scatter_(-1, top.indices, (top.values > 0).float())
        votes = view.group(hits.sum(dim=1), "sum")                 # (H_kv, T)
        best = view.group(probs.amax(dim=1), "max")
        score = votes + best                                       # best < 1: only breaks ties
        valid = view.valid_mask()
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            score[h, : self.initial] = float("inf")
            score[h, max(0, c - self.recent): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
