"""Three-window vote (board B_online).

Query-agnostic SnapKV ranks tokens by what the closing 32 context rows read. That window is one sample of
"what the model looks back at", and on retrieval prompts it is dominated by the last paragraph. We take three
consecutive windows of 32 rows (the closing 96 context rows), let each nominate its own top-k (pooled attention,
group mean), and rank tokens by the number of windows that nominated them, ties broken by the summed attention
over all 96 rows. A token read by every window is kept before one that a single window read heavily.

The four opening tokens and the closing 32 tokens are kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) in its query-agnostic form (as evaluated in KVzip, arXiv
2505.23416), and StreamingLLM (arXiv 2309.17453) for the opening tokens. The per-window vote is our addition.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class ThreeWindowVote(EvictionMethod):
    name = "three_window_vote"
    query_window = 96
    windows = 3
    kernel = 5
    opening = 4
    closing = 32

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()  # (H_q, N, T) causal
        n = attn.shape[1]
        cuts = torch.linspace(0, n, self.windows + 1).round().long().tolist()
        votes = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        total = torch.zeros_like(votes)
        for a, b in zip(cuts[:-1], cuts[1:]):
            if b <= a:
                continue
            s = view.group(attn[:, a:b].sum(dim=1), "mean")
            s = F.max_pool1d(s[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
            total += s
            top = s.topk(min(view.budget, s.shape[1]), dim=1).indices
            votes.scatter_add_(1, top, torch.ones_like(top, dtype=votes.dtype))
        tie = total / total.amax(dim=1, keepdim=True).clamp_min(1e-12)
        score = votes + 0.999 * tie
        top_pos = view.positions.max()
        fixed = (view.positions > top_pos - self.closing) | (view.positions < self.opening)
        score = score.masked_fill(fixed, float("inf"))
        return Keep.from_topk(score, view.budget)
