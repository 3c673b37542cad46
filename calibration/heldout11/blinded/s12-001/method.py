"""Novelty-weighted accumulation for decode-time eviction (board C).

H2O (Zhang et al., 2023, arXiv 2306.14048) keeps the tokens with the largest attention summed over every query
so far. In a reasoning trace most consecutive queries are alike (the model is in the middle of one step), so a
long stretch of similar rows keeps voting for the same tokens and buries what the occasional new step needed. We
weight each row's vote by how new the row is: one minus its cosine similarity to the running mean of that query
head's earlier rows (floored at ``floor``), so a row that opens a new step counts more than the tenth row of the
same step.

    score(token) = sum over rows r since the start of w_r * attention_r(token)   (summed over the group's heads)
    w_r          = max(floor, 1 - cos(q_r, mean of the head's earlier rows))

Sums are carried across evictions by position, as in the harness's H2O. The newest ``recent`` tokens and the four
opening tokens are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class NoveltyWeighted(EvictionMethod):
    name = "novelty_weighted"
    query_window = 512  # at least one block (an eighth of the cap, at most 512): no row is skipped
    floor = 0.05
    recent = 8
    opening = 4

    def select(self, view: LayerView) -> Keep:
        b = view.budget
        valid = view.valid_mask()
        total = view.recall("acc")
        if view.queries is not None:
            qpos = view.query_positions
            fresh = qpos > view.state.get("last", -1)
            if bool(fresh.any()):
                q = view.queries[:, fresh].float()  # (H_q, n, D)
                mean = view.state.get("qmean")
                count = view.state.get("qcount", 0)
                weights = []
                for r in range(q.shape[1]):
                    row = q[:, r]
                    if mean is None:
                        w = torch.ones(row.shape[0], device=row.device)
                        mean = row.clone()
                    else:
                        w = (1 - F.cosine_similarity(row, mean, dim=-1)).clamp_min(self.floor)
                        mean = mean + (row - mean) / (count + 1)
                    count += 1
                    weights.append(w)
                view.state.update(qmean=mean, qcount=count, last=int(qpos.max()))
                a = view.attention()[:, fresh]  # (H_q, n, T), causal
                w = torch.stack(weights, 1)  # (H_q, n)
                total = total + view.group((a * w[..., None]).sum(1), "sum")
        view.remember("acc", total)
        n_real = valid.sum(1, keepdim=True)
        idx = torch.arange(view.n_tokens, device=valid.device)[None]
        protect = valid & ((idx >= n_real - self.recent) | (idx < self.opening))
        score = torch.where(protect, 1e9 + view.positions.float(), total)
        return Keep.from_topk(score, b, view.valid)
