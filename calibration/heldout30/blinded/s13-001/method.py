"""Quest (Tang et al., 2024, "Quest: Query-Aware Sparsity for Efficient Long-Context LLM Inference", ICML 2024,
arXiv 2406.10774), ported to board A as a one-shot, page-granular eviction.

Quest keeps, for every page of the KV cache (16 tokens by default), the channel-wise maximum M and minimum m of
its keys; for a query q the largest q.k any key of the page can reach is bounded by sum_d max(q_d M_d, q_d m_d),
and attention runs only over the top pages by that bound. The bound, the page size and the page-level choice are
Quest's. What differs here (see DESCRIPTION.md): Quest selects pages anew for every decoding query over a full
cache and never evicts; on board A the cache is compressed once, so the question rows stand in for the decoding
queries, a page's criticality is the largest bound over those rows and over the KV head's query heads, and the
pages not chosen are dropped. The question rows themselves are always kept (Quest always attends to the current
page); if the budget is not a whole number of pages, the last page taken is cut to its best tokens by the
question's attention.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class QuestPages(EvictionMethod):
    name = "quest_pages"
    question_queries = True
    page = 16

    def _bounds(self, keys: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
        """keys (n, D), queries (g, N, D) -> per page, the largest upper bound over the queries."""
        n, d = keys.shape
        n_pages = -(-n // self.page)
        pad = n_pages * self.page - n
        k = keys.float()
        big = torch.cat([k, k.new_full((pad, d), float("-inf"))]).view(n_pages, self.page, d).amax(dim=1)
        small = torch.cat([k, k.new_full((pad, d), float("inf"))]).view(n_pages, self.page, d).amin(dim=1)
        q = queries.float().reshape(-1, d)                              # (g * N, D)
        bound = torch.maximum(q[:, None, :] * big[None], q[:, None, :] * small[None]).sum(dim=-1)
        return bound.amax(dim=0)                                         # (P,)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        first_row = int(view.query_positions.min())
        valid = view.valid_mask()
        attn = view.group(view.attention(reduce="sum"), "sum")
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            pos = view.positions[h, idx]
            size = min(view.budget, idx.numel())
            rows = torch.nonzero(pos >= first_row).flatten()[-size:]
            keep = torch.zeros(idx.numel(), dtype=torch.bool, device=idx.device)
            keep[rows] = True
            ctx = torch.nonzero(pos < first_row).flatten()
            room = size - rows.numel()
            if room > 0 and ctx.numel():
                bound = self._bounds(view.keys[h, idx[ctx]], view.queries[h * g:(h + 1) * g])
                for p in bound.argsort(descending=True).tolist():
                    if room <= 0:
                        break
                    members = ctx[p * self.page:(p + 1) * self.page]
                    if members.numel() > room:
                        best = attn[h, idx[members]].topk(room).indices
                        members = members[best]
                    keep[members] = True
                    room -= members.numel()
            out.append(idx[keep])
        return Keep(tuple(out))
