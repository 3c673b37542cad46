"""Top-m reconstruction scoring (board B_offline).

KVzip (Kim et al., 2025, arXiv 2505.23416) asks the model to repeat the context and scores each cached pair by the
*maximum* attention it receives from any repeat row. A maximum is decided by a single row, and in a small model
single rows are noisy: a stray spike can keep a token that nothing else needs, and a token that several rows need a
little loses to it. We replace the maximum by the mean of the ``m`` largest attentions a pair receives over the
repeat rows (m = 4), per query head, then take the maximum over the KV head's query heads as KVzip does. The four
opening tokens are kept. Everything else is KVzip's: the same repeat pass (the harness's reconstruction queries),
one uniform budget per layer and head as in the harness's KVzip port.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class TopMReconstruction(EvictionMethod):
    name = "top_m_reconstruction"
    reconstruction_queries = True
    m = 4
    opening = 4
    rows = 128

    def _top_m_mean(self, view: LayerView) -> torch.Tensor:
        q = view.queries
        best = None
        for lo in range(0, q.shape[1], self.rows):
            a = view.attention(q[:, lo: lo + self.rows])  # (H_q, c, T): the repeat follows the whole context
            chunk = a.topk(min(self.m, a.shape[1]), dim=1).values
            best = chunk if best is None else torch.cat([best, chunk], 1).topk(
                min(self.m, best.shape[1] + chunk.shape[1]), dim=1).values
        return best.mean(1)  # (H_q, T)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = view.group(self._top_m_mean(view), "max")
        score = score.masked_fill(view.positions < self.opening, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
