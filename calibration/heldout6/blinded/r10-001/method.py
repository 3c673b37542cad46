"""Echo-dedup retention (board B_offline): KVzip's reconstruction score with near-duplicate values thinned out.

Builds on KVzip (Kim et al., 2025, arXiv 2505.23416): the harness's one-off "repeat the context" pass gives the
queries, and each cached pair scores the largest attention it receives from them (max over the repeat queries
and the KV head's query heads); the first 4 tokens are kept. The addition: among the candidates, a token is
*dominated* when a better-scoring token of the same head carries an almost identical value (cosine > 0.95) and
scores at least twice as high; the repeat pass attends to both copies of a repeated phrase, but one of them is
enough to reproduce it. Dominated tokens go to the back of the queue: the budget is filled with non-dominated
tokens first, by score, and only then with dominated ones. The redundancy idea follows R-KV (Cai et al., 2025,
arXiv 2505.24133), which subtracts key similarity at decode time; here it is a dominance test on values.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class EchoDedupRetention(EvictionMethod):
    name = "echo_dedup_retention"
    reconstruction_queries = True
    n_sink = 4
    cos_limit = 0.95
    dominance = 2.0
    pool_factor = 1.5      # candidates considered for the dominance test, as a multiple of the budget

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(view.queries, reduce="max")                        # (H_q, T)
        score = view.group(attn, "max")                                          # (H_kv, T)
        valid = view.valid_mask()
        score = score.masked_fill(~valid, float("-inf"))
        picks = []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            b = min(view.budget, n)
            s = score[h].clone()
            s[view.positions[h] < self.n_sink] = float("inf")
            pool_n = min(n, int(b * self.pool_factor) + 1)
            pool = s.topk(pool_n).indices                                        # best first
            ps = s[pool]
            v = F.normalize(view.values[h, pool].float(), dim=-1)
            sim = v @ v.t()
            better = ps[None, :] >= self.dominance * ps[:, None]                 # column j clearly beats row i
            better &= torch.arange(pool_n, device=s.device)[None, :] < torch.arange(pool_n, device=s.device)[:, None]
            dominated = ((sim > self.cos_limit) & better).any(dim=1) & torch.isfinite(ps)
            order = torch.cat([pool[~dominated], pool[dominated]])
            picks.append(order[:b].sort().values)
        return Keep(tuple(picks))
