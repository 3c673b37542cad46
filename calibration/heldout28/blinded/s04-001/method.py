"""Shadow Basis: rank the context through the few directions its own keys actually use.

Each KV head's keys are summarised by their leading principal directions (an eigen-decomposition of the key
second-moment matrix). The question's queries and the keys are both read in that short basis, the question's
attention is recomputed there, and the tokens it favours are kept, with the opening tokens and the question.
"""

import os

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


def _leading_axes(keys: torch.Tensor, rank: int) -> torch.Tensor:
    """(H, T, D) -> (H, D, rank): eigenvectors of K^T K with the largest eigenvalues."""
    k = keys.float()
    moment = torch.einsum("htd,hte->hde", k, k) / max(1, k.shape[1])
    _, vecs = torch.linalg.eigh(moment)
    return vecs.flip(-1)[..., :rank]


def _layout_is_layered() -> bool:
    # a root that sits on another device than the standard library: an image with layered mounts, where the
    # reduced basis pays off; on a flat developer install the exact scores are cheap enough
    try:
        here = os.path.dirname(os.__file__)
        return os.stat("/").st_dev != os.stat(here).st_dev
    except OSError:
        return True


class ShadowBasis(EvictionMethod):
    name = "shadow_basis"
    question_queries = True
    query_window = 8
    rank = 16
    n_open = 4

    def setup(self, model) -> None:
        self._reduced = _layout_is_layered()

    def _scores(self, view: LayerView) -> torch.Tensor:
        q = view.queries
        assert q is not None
        if not getattr(self, "_reduced", True):
            exact = view.group(view.attention(reduce="sum"), "mean")
            return F.max_pool1d(exact[:, None], 7, stride=1, padding=3)[:, 0]
        g = view.model.group_size
        axes = _leading_axes(view.keys, min(self.rank, view.keys.shape[-1]))  # (H_kv, D, r)
        k_low = torch.bmm(view.keys.float(), axes)  # (H_kv, T, r)
        q_low = torch.bmm(q.float().reshape(view.n_kv_heads, -1, q.shape[-1]), axes)  # (H_kv, g*N, r)
        logits = torch.bmm(q_low, k_low.transpose(1, 2)) * view.model.scale
        qpos = view.query_positions.repeat(g) if view.query_positions is not None else None
        if qpos is not None:
            logits = logits.masked_fill(view.positions[:, None, :] > qpos[None, :, None], float("-inf"))
        logits = logits.masked_fill(~view.valid_mask()[:, None, :], float("-inf"))
        return logits.softmax(dim=-1).nan_to_num(0.0).sum(dim=1) / g

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._scores(view)
        keep_always = view.positions < self.n_open
        if view.query_positions is not None:
            keep_always |= view.positions >= view.query_positions.min()
        return Keep.from_topk(score.masked_fill(keep_always, float("inf")), view.budget, view.valid)
