"""Squeezed Attention, ported to one-shot eviction on board B_offline.

Credit: Hooper et al., "Squeezed Attention: Accelerating Long Context Length LLM Inference", arXiv 2411.09688.
The paper clusters the keys of a fixed context offline (k-means), then at query time compares each query with
the centroids first and computes exact attention only for the keys of the clusters that pass. This port keeps
that two-level lookup but, as nothing here is known of the question at compression time, the queries of the
harness's reconstruction pass (the model repeating the context) stand in for the query-time queries, and the
result is a one-shot eviction rather than per-query sparse attention. Cluster count, k-means rounds and the
candidate factor are my choices; the first tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SqueezedPort(EvictionMethod):
    name = "squeezed_attention_port"
    reconstruction_queries = True
    tokens_per_cluster = 32
    rounds = 8
    candidates = 2.0
    sinks = 4

    def _kmeans(self, k: torch.Tensor, c: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = torch.Generator().manual_seed(seed)
        cent = k[torch.randperm(k.shape[0], generator=gen)[:c]].clone()
        for _ in range(self.rounds):
            lab = torch.cdist(k, cent).argmin(dim=1)
            sums = torch.zeros_like(cent).index_add_(0, lab, k)
            cnt = torch.bincount(lab, minlength=c)[:, None].float()
            cent = torch.where(cnt > 0, sums / cnt.clamp_min(1), cent)
        return cent, torch.cdist(k, cent).argmin(dim=1)

    def select(self, view: LayerView) -> Keep:
        b, t = view.budget, view.n_tokens
        if b >= t or view.queries is None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        exact = view.group(view.attention(reduce="max"), "max")          # (H_kv, T)
        g, out = view.model.group_size, []
        c = max(2, t // self.tokens_per_cluster)
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
            cent, lab = self._kmeans(k, c, 31 * view.layer + h)
            size = torch.bincount(lab, minlength=c).float()
            q = view.queries[h * g:(h + 1) * g].float().reshape(-1, k.shape[1])
            logit = (q @ cent.T) * view.model.scale + size.clamp_min(1).log()[None, :]
            est = logit.softmax(-1).amax(dim=0)                              # best estimate per cluster
            order = est.argsort(descending=True)
            want, chosen = self.candidates * b, torch.zeros(t, dtype=torch.bool)
            for ci in order.tolist():
                chosen |= lab == ci
                if int(chosen.sum()) >= want:
                    break
            s = exact[h].masked_fill(~chosen.to(exact.device), float("-inf"))
            s[: self.sinks] = float("inf")
            out.append(s.topk(min(b, t)).indices.sort().values)
        return Keep(tuple(out))
