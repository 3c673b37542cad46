"""Incremental question-led sieve (board A).

A single scoring pass over the whole context lets early tokens compete with everything at once, and the
softmax of a long context is dominated by a few hubs. We replay the context in slices instead: a running
shortlist of at most the layer's share is carried forward, each new slice joins it, and the question rows
re-read only that candidate pool (their softmax restricted to it) to decide which candidates survive to the
next slice. After the last slice the survivors plus the question span are the cache.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class QuestionLedSieve(EvictionMethod):
    name = "question_led_sieve"
    query_window = 16
    question_queries = True
    slice_len = 128

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        valid = view.valid_mask()
        qstart = int(view.query_positions.min())
        q = view.queries.float()
        picks = []
        for h in range(view.n_kv_heads):
            pos = view.positions[h]
            ok = valid[h]
            k = view.keys[h].float()
            lg = torch.einsum("gnd,td->gnt", q[h * g:(h + 1) * g], k) * view.model.scale  # (g, N, T)
            lg = lg.masked_fill(pos[None, None, :] > view.query_positions[None, :, None], float("-inf"))
            tail = (pos >= qstart) & ok
            if int(tail.sum()) > view.budget // 2:
                tail = (pos >= int(view.query_positions.max()) - view.budget // 4) & ok
            room = max(0, view.budget - int(tail.sum()))
            ctx = (ok & ~tail).nonzero().flatten()
            pool = torch.empty(0, dtype=torch.long)
            for s in range(0, ctx.numel(), self.slice_len):
                cand = torch.cat([pool, ctx[s:s + self.slice_len]])
                sub = lg[:, :, cand].softmax(-1).nan_to_num(0.0)  # question re-reads the pool only
                vote = sub.sum(1).mean(0)
                if cand.numel() > room:
                    cand = cand[vote.topk(room).indices]
                pool = cand.sort().values
            picks.append(torch.cat([pool, tail.nonzero().flatten()]).sort().values)
        return Keep(tuple(picks))
