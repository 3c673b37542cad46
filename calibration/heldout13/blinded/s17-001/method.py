"""Second-hop question attention (board A).

Question-aware eviction keeps what the closing rows (which hold the question) read. A token the question reads
is often only useful together with what it refers back to (the entity its sentence is about, the start of the
sentence), which the question itself barely reads. We add one hop: the 16 tokens the closing rows read most are taken as
relays, their own (prefill) queries attend over the earlier keys, and what the relays read inherits half of the
relay's weight:

    score = a + 0.5 * sum_{r in relays} a_r * attn_r

a: attention of the closing 32 prompt rows, summed, group mean; attn_r: causal attention row of relay r, group
mean. The closing 16 prompt tokens and four opening tokens are always kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for the window scoring, StreamingLLM (arXiv 2309.17453) for
the opening tokens. The relay hop is our addition.
"""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class SecondHop(EvictionMethod):
    name = "second_hop"
    query_window = 1 << 20  # every prompt query: the relays' own rows are needed
    question_queries = True
    closing_rows = 32
    relays = 16
    carry = 0.5
    opening = 4
    closing = 16

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        qpos = view.query_positions
        g = view.model.group_size
        last = qpos >= qpos.max() - self.closing_rows + 1
        rows = reference_attention(view.queries[:, last], view.keys, view.positions, qpos[last], g,
                                   scale=view.model.scale, reduce="sum")
        a = view.group(rows, "mean")  # (H_kv, T)
        score = a.clone()
        pos0 = view.positions[0]
        for h in range(view.n_kv_heads):
            cand = a[h].masked_fill(pos0 >= qpos[last].min(), -1.0)
            top = cand.topk(min(self.relays, cand.numel()))
            rel_pos = pos0[top.indices]
            pick = torch.isin(qpos, rel_pos)
            if not bool(pick.any()):
                continue
            qh = view.queries[h * g:(h + 1) * g][:, pick]
            hop = reference_attention(qh, view.keys[h:h + 1], view.positions[h:h + 1], qpos[pick], g,
                                      scale=view.model.scale)  # (g, n_relays, T)
            w = a[h][torch.searchsorted(pos0, qpos[pick])]
            score[h] += self.carry * (hop.mean(dim=0) * w[:, None]).sum(dim=0)
        top = view.positions.max()
        fixed = (view.positions > top - self.closing) | (view.positions < self.opening)
        score = score.masked_fill(fixed, float("inf"))
        return Keep.from_topk(score, view.budget)
