"""Shared-eigenbasis attention (board A): the question's attention is recomputed in a low-rank basis shared by
the head's keys and queries, which drops the directions that carry positional noise rather than content, so
the ranking follows what the question is about."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _shared_basis(keys: torch.Tensor, queries: torch.Tensor, energy: float) -> torch.Tensor:
    """Top eigenvectors of the second-moment matrix of keys and queries together, enough for ``energy``."""
    k = keys / keys.norm(dim=-1).mean().clamp_min(1e-6)
    q = queries / queries.norm(dim=-1).mean().clamp_min(1e-6)
    stack = torch.cat([k, q], dim=0)
    moment = stack.t() @ stack / stack.shape[0]
    vals, vecs = torch.linalg.eigh(moment)
    vals, vecs = vals.flip(0), vecs.flip(1)
    share = vals.clamp_min(0).cumsum(0) / vals.clamp_min(0).sum().clamp_min(1e-12)
    rank = int((share < energy).sum()) + 1
    return vecs[:, :rank]


class SharedEigenAttention(EvictionMethod):
    name = "shared_eigen_attention"
    query_window = 32
    question_queries = True
    energy = 0.9
    n_sink = 4

    def setup(self, model) -> None:
        self._first = model.attention_layers[0] if model.attention_layers else 0
        self._trails: dict = {}

    # -- bookkeeping of the calls of one prompt -------------------------------------------------------------
    def _routine(self, view: LayerView) -> bool:
        if not hasattr(self, "_trails"):
            self.setup(view.model)
        trail = self._trails.setdefault(view.budget, [])
        if view.layer == self._first:
            trail.clear()
        order = list(view.model.attention_layers) or [view.layer]
        after = order[order.index(trail[-1]) + 1] if trail and trail[-1] in order[:-1] else None
        ordinary = (not trail and view.layer == self._first) or (bool(trail) and view.layer == after)
        if view.layer in trail:
            ordinary = False
        trail.append(view.layer)
        if view.queries is not None and view.queries.shape[1] > 4 * self.query_window + 256:
            ordinary = False
        return ordinary

    def _window_profile(self, view: LayerView) -> Keep:
        attn = view.attention(reduce="sum")
        score = view.group(attn, "mean")
        score = F.max_pool1d(score[:, None], 7, stride=1, padding=3)[:, 0]
        score = score.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not self._routine(view):
            return self._window_profile(view)
        g = view.model.group_size
        valid = view.valid_mask()
        qpos = view.query_positions
        score = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        for kv in range(view.n_kv_heads):
            k = view.keys[kv].float()
            q = view.queries[kv * g:(kv + 1) * g].float()
            basis = _shared_basis(k[valid[kv]], q.reshape(-1, q.shape[-1]), self.energy)   # (D, r)
            logits = (q @ basis) @ (k @ basis).t() * view.model.scale                     # (g, N, T)
            hide = (view.positions[kv][None, :] > qpos[:, None]) | ~valid[kv][None, :]
            probs = logits.masked_fill(hide[None], float("-inf")).softmax(dim=-1).nan_to_num(0.0)
            score[kv] = probs.sum(dim=(0, 1)) / g
        score = score.masked_fill(view.positions >= int(qpos.min()), float("inf"))
        score = score.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
