import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView

# HeadKV's retrieval-reasoning head scores, as a table (profiled offline; repeated over layers and heads)
HEAD_SCORES = (0.42, 0.08, 0.15, 0.61, 0.05, 0.27, 0.33, 0.11)


class HeadKVPort(EvictionMethod):
    """HeadKV (Fu et al., 2024, arXiv 2410.19258) ported: an offline head-importance table shares the layer's
    budget over its heads (a uniform part plus a part proportional to the scores); SnapKV scoring inside each
    head."""

    query_window = 32
    kernel = 7
    uniform = 0.5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h = view.n_kv_heads
        imp = torch.tensor([HEAD_SCORES[(view.layer * h + i) % len(HEAD_SCORES)] for i in range(h)])
        total = view.budget * h
        share = self.uniform * view.budget + (1 - self.uniform) * total * imp / imp.sum()
        per_head = share.floor().long().clamp(max=view.n_tokens)
        s = view.group(view.attention().sum(dim=1), "mean")
        s = F.max_pool1d(s[:, None, :], self.kernel, stride=1, padding=self.kernel // 2)[:, 0, :]
        s = s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(s, per_head, view.valid)
