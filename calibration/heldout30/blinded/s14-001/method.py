"""Clause Keeper: keep the context in short clauses, never in scattered words.

A fact survives compression only if the few tokens that state it survive together; keeping single tokens by
score tends to keep a name and lose the number that follows it. Clause Keeper cuts each head's context into
clauses of 10 consecutive tokens and rates a clause by the total attention its tokens receive from the closing 32
rows of the context (summed over the rows, averaged over the KV head's query heads). The closing rows are kept;
the rest of the budget goes to whole clauses, best first; if the budget ends inside a clause, that clause keeps
its best-rated tokens.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class ClauseKeeper(EvictionMethod):
    name = "clause_keeper"
    query_window = 32
    clause = 10

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        received = view.group(view.attention(reduce="sum"), "mean")       # (H_kv, T)
        start = int(view.query_positions.min())
        valid = view.valid_mask()
        c = self.clause
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            pos = view.positions[h, idx]
            size = min(view.budget, idx.numel())
            closing = torch.nonzero(pos >= start).flatten()[-size:]
            body = torch.nonzero(pos < start).flatten()
            room = size - closing.numel()
            chosen = [closing]
            if room > 0 and body.numel():
                s = received[h, idx[body]]
                short = (-body.numel()) % c
                rows = torch.cat([s, s.new_zeros(short)]).unfold(0, c, c)         # (n_clause, c)
                order = rows.sum(dim=1).argsort(descending=True)
                for j in order.tolist():
                    members = body[j * c:(j + 1) * c]
                    if members.numel() > room:
                        members = members[s[j * c:(j + 1) * c].topk(room).indices]
                    chosen.append(members)
                    room -= members.numel()
                    if room <= 0:
                        break
            out.append(idx[torch.cat(chosen).sort().values])
        return Keep(tuple(out))
