"""R-KV (Cai et al., 2025, arXiv 2505.24133): decode-time eviction for reasoning traces, importance minus
redundancy. Importance = max-pooled (kernel 7) mean attention of the last 8 queries; redundancy = softmax over
tokens of their mean cosine similarity to the other keys (diagonal zeroed, and for each token its most recent
similar copy, cos > 0.5, zeroed so the newest copy is protected); score = lambda x importance - (1 - lambda) x
redundancy with lambda = 0.07 (the official code's default); the last 8 tokens are always kept. The harness
calls it whenever a layer reaches its cap and it gives back a block, as the official code, which compresses every
128 generated tokens (a buffer over the budget)."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class RKV(EvictionMethod):
    name = "rkv"
    query_window = 8
    kernel = 7
    mix_lambda = 0.07
    threshold = 0.5

    def redundancy(self, keys: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        k = F.normalize(keys.float(), dim=-1)
        sim = torch.einsum("htd,hsd->hts", k, k)
        n = sim.shape[-1]
        pair = valid[:, :, None] & valid[:, None, :]
        sim = sim.masked_fill(~pair | torch.eye(n, dtype=torch.bool, device=sim.device), 0.0)
        similar = sim > self.threshold
        idx = torch.arange(n, device=sim.device).expand_as(sim)
        newest = torch.where(similar, idx, -1).amax(dim=-1)  # per token: its most recent similar copy
        rows = newest >= 0
        h_idx, t_idx = torch.nonzero(rows, as_tuple=True)
        sim[h_idx, t_idx, newest[rows]] = 0.0
        mean = sim.sum(dim=1) / valid.sum(dim=1, keepdim=True).clamp_min(1)
        return mean.masked_fill(~valid, float("-inf")).softmax(dim=-1)

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()
        imp = view.group(attn.mean(dim=1), "mean")
        imp = F.max_pool1d(imp[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        score = self.mix_lambda * imp - (1 - self.mix_lambda) * self.redundancy(view.keys, valid)
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):  # the last `query_window` tokens of each head are kept
            c = int(counts[h])
            score[h, max(0, c - self.query_window) : c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
