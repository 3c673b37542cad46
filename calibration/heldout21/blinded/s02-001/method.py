"""Lens scoring (board A, question-aware prefill).

Most of a head's query-key logit comes from a handful of feature lanes: the lanes where both the queries and the
keys carry large magnitudes. Lens scoring picks, per KV head, the 16 lanes with the largest product of mean |q| and
mean |k| (the lens), approximates every question/window query's logits with those lanes only, turns them into a
softmax per query and sums what each token receives. The four opening tokens are pinned.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _lane_pick(q_abs: torch.Tensor, k_abs: torch.Tensor, lanes: int) -> torch.Tensor:
    """q_abs (H_kv, D), k_abs (H_kv, D) -> (H_kv, lanes) lane indices with the largest product."""
    return (q_abs * k_abs).topk(min(lanes, q_abs.shape[-1]), dim=-1).indices


class LensScoring(EvictionMethod):
    name = "lens_scoring"
    query_window = 24
    question_queries = True
    lanes = 16
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        h_kv, t, d = view.keys.shape
        q = view.queries.float().reshape(h_kv, g * view.queries.shape[1], d)       # group's rows stacked
        k = view.keys.float()
        mask = view.valid_mask()
        k_abs = (k.abs() * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp_min(1)
        lane = _lane_pick(q.abs().mean(1), k_abs, self.lanes)                     # (H_kv, L)
        q_l = torch.gather(q, 2, lane[:, None, :].expand(-1, q.shape[1], -1))
        k_l = torch.gather(k, 2, lane[:, None, :].expand(-1, t, -1))
        # the lens sees a fraction of the lanes: rescale so the logits keep the full-width temperature
        logit = torch.einsum("hnl,htl->hnt", q_l, k_l) * view.model.scale * (d / lane.shape[1]) ** 0.5
        qpos = view.query_positions.repeat(g)
        hide = view.positions[:, None, :] > qpos[None, :, None]
        hide = hide | ~mask[:, None, :]
        probs = logit.masked_fill(hide, float("-inf")).softmax(-1).nan_to_num(0.0)
        score = probs.sum(1)
        score[:, : self.opening] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
