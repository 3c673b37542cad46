"""Topic Buckets: group the cache's keys into topics, then keep the topics the re-read keeps returning to."""

import torch

from harness import EvictionMethod, Keep, LayerView


class TopicBuckets(EvictionMethod):
    name = "topic_buckets"
    reconstruction_queries = True
    query_window = 32
    per_bucket = 16          # about this many tokens per topic
    rounds = 6
    lead = 4
    tail = 16

    def _buckets(self, k: torch.Tensor, m: int) -> tuple[torch.Tensor, torch.Tensor]:
        unit = k / k.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        cent = unit[torch.linspace(0, k.shape[0] - 1, m).long()].clone()
        for _ in range(self.rounds):
            label = (unit @ cent.T).argmax(dim=-1)
            tot = torch.zeros_like(cent).index_add_(0, label, unit)
            cnt = torch.bincount(label, minlength=m).clamp_min(1)[:, None].float()
            cent = tot / cnt
            cent = cent / cent.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        return (unit @ cent.T).argmax(dim=-1), cent

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        g = view.model.group_size
        D = view.keys.shape[-1]
        out = []
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            k = view.keys[h, :c].float()
            m = max(2, c // self.per_bucket)
            label, cent = self._buckets(k, m)
            q = view.queries[h * g:(h + 1) * g].float().reshape(-1, D)
            q = q / q.norm(dim=-1, keepdim=True).clamp_min(1e-6)
            pull = torch.softmax(q @ cent.T * 8.0, dim=-1).mean(dim=0)               # (m,)
            order = pull.argsort(descending=True)
            rank_of = torch.empty_like(order)
            rank_of[order] = torch.arange(m)
            tok = rank_of[label].float()                                            # lower = better bucket
            own = (k @ (q.mean(0) * k.norm(dim=-1).mean())).softmax(0)              # within-bucket order
            score = -tok + own
            score[: self.lead] = float("inf")
            score[max(0, c - self.tail):] = float("inf")
            out.append(score.topk(min(view.budget, c)).indices.sort().values)
        return Keep(tuple(out))
