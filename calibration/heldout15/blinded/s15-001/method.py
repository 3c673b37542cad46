"""Decayed heavy hitters with an elastic recent window (board C, decode-time).

H2O keeps half of the cache for the most recent tokens and half for the tokens with the largest accumulated
attention. In a reasoning trace the right split changes: while the model works through a computation it reads
mostly the last few lines, when it starts a new step it reaches back to the problem. We let the split follow the
measured share, and let old attention fade.

- Accumulated attention: every query since the previous call adds its attention (summed over the KV head's query
  heads); before adding, the running totals are multiplied by 0.9 per call, so tokens that mattered long ago fade.
- Elastic window: the share of the new queries' attention that lands on the newest 64 tokens sets the recent
  window, recent = clip(share x budget, 16, budget / 2).
- The recent window and four opening tokens are kept; the rest goes by decayed accumulated attention.

Builds on H2O (Zhang et al., 2023, arXiv 2306.14048) for the accumulated scores and the heavy/recent split, and on
StreamingLLM (Xiao et al., 2023, arXiv 2309.17453) for the opening tokens. The per-call decay and the measured
split are our changes, and modest ones.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ElasticHeavyHitters(EvictionMethod):
    name = "elastic_heavy_hitters"
    query_window = 64
    decay = 0.9
    near = 64
    opening = 4

    def select(self, view: LayerView) -> Keep:
        acc = view.recall("acc") * self.decay
        share = view.state.get("share", 0.25)
        if view.queries is not None:
            seen = view.state.get("seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                attn = view.group(view.attention(view.queries[:, fresh], reduce="sum"), "sum")
                qpos = view.query_positions[fresh]
                acc = acc + attn
                newest = view.positions >= (view.positions.max() - self.near + 1)
                total = attn.sum().clamp_min(1e-12)
                share = float((attn * newest).sum() / total)
                view.state["share"] = share
                view.state["seen"] = int(qpos.max())
        view.remember("acc", acc)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        recent = int(min(max(share * view.budget, 16), view.budget / 2))
        scores = acc.clone()
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - recent):n] = float("inf")
        scores = scores.masked_fill(view.positions < self.opening, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
