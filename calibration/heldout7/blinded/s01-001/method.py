"""Salient-channel retention (board A): the question is matched against the context only in the few key channels
where both the question's queries and the context's keys carry energy; the other channels are treated as noise
and masked before the attention that ranks the context."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _channel_energy(x: torch.Tensor) -> torch.Tensor:
    """(..., N, D) -> (..., D): mean squared activation of every feature over the N rows."""
    return x.float().pow(2).mean(dim=-2)


def _salient_mask(q_energy: torch.Tensor, k_energy: torch.Tensor, keep_share: float) -> torch.Tensor:
    """(H_kv, D) bool: the channels whose joint query x key energy is among the top ``keep_share`` of the head."""
    joint = q_energy * k_energy
    d = joint.shape[-1]
    n_keep = max(1, min(d, int(round(d * keep_share))))
    top = joint.topk(n_keep, dim=-1).indices
    return torch.zeros_like(joint, dtype=torch.bool).scatter_(-1, top, True)


class SalientChannelRetention(EvictionMethod):
    name = "salient_channel_retention"
    query_window = 24
    question_queries = True
    keep_share = 0.4     # share of key channels that take part in the ranking
    smooth = 5           # width of the averaging filter over neighbouring positions
    n_anchor = 2

    def _masked_scores(self, view: LayerView) -> torch.Tensor:
        g = view.model.group_size
        q = view.queries.float()                                        # (H_q, N, D)
        keys = view.keys.float()                                        # (H_kv, T, D)
        h_kv, t, d = keys.shape
        q_by_kv = q.reshape(h_kv, g * q.shape[1], d)                    # a KV head's query rows side by side
        mask = _salient_mask(_channel_energy(q_by_kv), _channel_energy(keys), self.keep_share).float()
        logits = torch.einsum("hnd,htd->hnt", q_by_kv * mask[:, None, :], keys) * view.model.scale
        qpos = view.query_positions.repeat(g)                           # rows are (group member, query) pairs
        future = view.positions[:, None, :] > qpos[None, :, None]
        invalid = ~view.valid_mask()[:, None, :]
        logits = logits.masked_fill(future | invalid, float("-inf"))
        probs = logits.softmax(dim=-1).nan_to_num(0.0)                  # (H_kv, g*N, T)
        per_token = probs.sum(dim=1) / g                                # summed over queries, mean over the group
        return F.avg_pool1d(per_token[:, None], self.smooth, stride=1, padding=self.smooth // 2,
                            count_include_pad=False)[:, 0]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._masked_scores(view)
        tail = view.positions >= int(view.query_positions.min())
        score = score.masked_fill(tail | (view.positions < self.n_anchor), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
