"""Sign-sketch retention (board A): rank the context by the attention the question would pay it, estimated
through a one-bit random sketch of every key, so that the ranking is computed from a compact code of the cache
rather than from the full-precision keys."""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


def _probe_matrix(rows: int, dim: int, device: torch.device) -> torch.Tensor:
    """A fixed Gaussian probe bank (rows x dim), the same for every layer and every call."""
    gen = torch.Generator().manual_seed(90210 + dim)
    return torch.randn(rows, dim, generator=gen).to(device)


def _hidden_future(key_pos: torch.Tensor, query_pos: torch.Tensor) -> torch.Tensor:
    """(N, T) True where the key lies after the query (a causal prompt never lets the query see it)."""
    return key_pos[None, :] > query_pos[:, None]


class SignSketchRetention(EvictionMethod):
    name = "sign_sketch_retention"
    query_window = 16
    question_queries = True
    n_probes = 256       # bits per key in the sketch
    n_anchor = 4         # first positions always kept

    def _estimate(self, view: LayerView) -> torch.Tensor:
        keys = view.keys.float()                                   # (H_kv, T, D)
        queries = view.queries.float()                             # (H_q, N, D)
        probes = _probe_matrix(self.n_probes, keys.shape[-1], keys.device)
        codes = torch.where(keys @ probes.t() >= 0, 1.0, -1.0)     # (H_kv, T, m): one bit per probe
        lengths = keys.norm(dim=-1)                                # (H_kv, T): the only float kept per key
        projected = queries @ probes.t()                           # (H_q, N, m): queries stay in full precision
        g = view.model.group_size
        const = math.sqrt(math.pi / 2.0) / self.n_probes
        valid = view.valid_mask()
        qpos = view.query_positions
        total = torch.zeros(view.keys.shape[:2], device=keys.device)
        for kv in range(view.n_kv_heads):
            inner = projected[kv * g:(kv + 1) * g] @ codes[kv].t()         # (g, N, T)
            logits = const * inner * lengths[kv][None, None, :] * view.model.scale
            blocked = _hidden_future(view.positions[kv], qpos) | ~valid[kv][None, :]
            logits = logits.masked_fill(blocked[None], float("-inf"))
            weights = torch.softmax(logits, dim=-1).nan_to_num(0.0)
            total[kv] = weights.sum(dim=(0, 1)) / g
        return total

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._estimate(view)
        tail_start = int(view.query_positions.min())
        protect = (view.positions >= tail_start) | (view.positions < self.n_anchor)
        score = score.masked_fill(protect, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
