"""Relay: the question reads the document page by page and passes on what it keeps.

The context is walked in pages of 256 tokens. At each page the question looks at what it carried so far plus the
new page, with its softmax taken over just those tokens, and keeps the best of them for the next page; what is left
at the end is the cache. The question span is kept throughout.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class Relay(EvictionMethod):
    name = "relay"
    question_queries = True
    query_window = 8
    page = 256

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        h_kv, t, d = view.keys.shape
        q = view.queries.float().view(h_kv, g, -1, d)
        logits = torch.einsum("hgnd,htd->hgnt", q, view.keys.float()) * view.model.scale   # (H_kv, g, N, T)
        mask = view.valid_mask()
        asked = (view.positions >= view.query_positions.min()) & mask
        out = []
        for h in range(h_kv):
            lh = logits[h]                                               # (g, N, T)
            carried = torch.zeros(0, dtype=torch.long, device=lh.device)
            room = max(0, view.budget - int(asked[h].sum()))
            doc = (mask[h] & ~asked[h]).nonzero().squeeze(1)
            for start in range(0, doc.numel(), self.page):
                pool = torch.cat([carried, doc[start:start + self.page]])
                if pool.numel() <= room:
                    carried = pool
                    continue
                sub = lh[:, :, pool]
                share = (sub - sub.logsumexp(dim=-1, keepdim=True)).exp().sum(dim=(0, 1))
                carried = pool[share.topk(room).indices]
            question = asked[h].nonzero().squeeze(1)
            question = question[question.numel() - min(view.budget, question.numel()):]
            out.append(torch.cat([carried, question]).sort().values)
        return Keep(tuple(out))
