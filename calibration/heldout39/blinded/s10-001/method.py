"""Two-Window Agreement: keep what both halves of the observation window agree on.

SnapKV scores context tokens by the attention of the last window of queries. On board B that window is just the
end of the context, and what it attends to partly reflects the local topic of those last sentences rather than
what later questions will need. Here the last 64 queries are split into an older and a newer half of 32; each
half's summed attention (mean over a KV head's query heads) is turned into a rank in [0, 1], and a token's score
is the lower of its two ranks (plus a small share of the sum to break ties): a token must matter to both halves.
The window's newest 16 tokens and the first 4 tokens are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class TwoWindowAgreement(EvictionMethod):
    name = "two_window_agreement"
    query_window = 64
    sinks = 4
    newest = 16

    @staticmethod
    def _ranked(x: torch.Tensor) -> torch.Tensor:
        return x.argsort(dim=-1).argsort(dim=-1).float() / max(1, x.shape[-1] - 1)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        n = view.queries.shape[1]
        half = max(1, n // 2)
        attn = view.attention()                                   # (H_q, n, T)
        older = view.group(attn[:, :half].sum(dim=1), "mean")
        newer = view.group(attn[:, half:].sum(dim=1), "mean") if n > half else older
        score = torch.minimum(self._ranked(older), self._ranked(newer)) + 1e-3 * (older + newer)
        edge = view.query_positions.sort().values[-min(self.newest, n)]
        keep = (view.positions < self.sinks) | (view.positions >= edge)
        score = score.masked_fill(keep, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
