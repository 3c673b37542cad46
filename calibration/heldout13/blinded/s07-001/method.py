"""Peak-and-presence rank fusion over the repeat pass (board B_offline).

KVzip scores each cached token by the *maximum* attention any query of the context-repeat pass pays it: a token
needed sharply once is kept. Tokens that many reconstruction steps lean on a little (formatting, entity names
that recur) score low under the max and are cut early. We keep both kinds by fusing two rankings of the same
repeat-pass attention with reciprocal-rank fusion:

    score_t = 1 / (c + rank_peak(t)) + 1 / (c + rank_presence(t)),   c = 60

peak = max over repeat queries (KVzip's score), presence = mean over repeat queries; both are taken as the max
over the KV head's query heads. The four opening tokens and the newest 16 are always kept.

Builds on KVzip (Kim et al., 2025, arXiv 2505.23416): the repeat pass and the max score are theirs.
Reciprocal-rank fusion is Cormack, Clarke and Buettcher (SIGIR 2009). Combining the two repeat-pass statistics
by rank fusion is our small addition.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _ranks(x: torch.Tensor) -> torch.Tensor:
    """Rank 0 = largest, per row."""
    order = x.argsort(dim=-1, descending=True)
    r = torch.empty_like(order)
    r.scatter_(-1, order, torch.arange(x.shape[-1], device=x.device).expand_as(order))
    return r.float()


class PeakPresenceFusion(EvictionMethod):
    name = "peak_presence_fusion"
    reconstruction_queries = True
    query_window = 32  # used only when no repeat pass is available
    c = 60.0
    opening = 4
    newest = 16

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        peak = view.group(view.attention(reduce="max"), "max")
        presence = view.group(view.attention(reduce="mean"), "max")
        valid = view.valid_mask()
        peak = peak.masked_fill(~valid, -1.0)
        presence = presence.masked_fill(~valid, -1.0)
        score = 1.0 / (self.c + _ranks(peak)) + 1.0 / (self.c + _ranks(presence))
        top = view.positions.max(dim=1, keepdim=True).values
        fixed = (view.positions > top - self.newest) | (view.positions < self.opening)
        score = score.masked_fill(fixed, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
