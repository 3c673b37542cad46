"""Pages or blocks kept whole by a summary, under a token budget: the block that no longer fits whole is filled by
its best tokens (a ranking inside that one block). That is a port's choice for the retrieval rules (Quest's pages
here), not a per-block quota of a method of its own. Pages' channel-wise maxima and minima written with
``scatter_reduce`` are the key envelope, and the bound they give, ranked, ranks pages, not channels."""

from __future__ import annotations

from reviewbench.evidence.computation.features import computation
from reviewbench.evidence.priorart_evidence import computation_matches

_PAGES = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class PageBounds(EvictionMethod):
    name = "page_bounds"
    page = 16

    def select(self, view: LayerView) -> Keep:
        out = []
        for h in range(view.n_kv_heads):
            live = torch.nonzero(view.valid[h]).flatten()
            k = view.keys[h, live].float()
            q = view.queries[h * view.model.group_size, -1].float()
            n = k.shape[0]
            want = min(view.budget, n)
            page_of = torch.arange(n) // self.page
            n_pages = int(page_of.max()) + 1
            hi = torch.full((n_pages, k.shape[1]), -1e9).scatter_reduce(0, page_of[:, None].expand_as(k), k, "amax")
            lo = torch.full((n_pages, k.shape[1]), 1e9).scatter_reduce(0, page_of[:, None].expand_as(k), k, "amin")
            bound = torch.maximum(q * hi, q * lo).sum(-1)
            tok = k @ q
            taken = []
            left = want
            for p in bound.argsort(descending=True).tolist():
                if left <= 0:
                    break
                members = torch.nonzero(page_of == p).flatten()
                if members.numel() > left:
                    members = members[tok[members].topk(left).indices]
                taken.append(members)
                left -= members.numel()
            out.append(live[torch.cat(taken)].sort().values)
        return Keep(tuple(out))
'''


def test_a_page_filled_partly_by_its_best_tokens_is_quest() -> None:
    c = computation(_PAGES)
    assert {"key_envelope", "block_scores"} <= set(c.features), sorted(c.features)
    matches = computation_matches(c.features, "Pages ranked by a bound on the query's product.", c.paths, "C")
    assert "block_quota" in c.features  # the last page, filled by its best tokens
    assert "Quest" in {m.short_name for m in matches if m.level == "same"}, matches[:3]
