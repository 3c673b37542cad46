"""Coded-key question attention (board A): the question ranks the context through a compact per-channel code of
the keys (a few levels per channel, placed where that channel's values actually are, with the rare extreme entries
kept exact), computed in the keys' position-free frame. The code denoises the ranking: attention on coded keys
ignores small, position-dependent fluctuations that make neighbouring filler tokens outrank a needle."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, ModelInfo


def _position_free(view: LayerView, keys: torch.Tensor, undo: bool) -> torch.Tensor:
    try:
        view.rope
    except ValueError:
        return keys.float()
    out = torch.empty_like(keys, dtype=torch.float32)
    for h in range(keys.shape[0]):
        pos = view.positions[h]
        out[h] = view.rotate(keys[h], -pos if undo else pos)
    return out


def _code_channels(x: torch.Tensor, levels: int, rare: float) -> torch.Tensor:
    """(H, T, D): per (head, channel), the ``rare`` share of entries farthest from the channel median is kept exact;
    the rest snaps to the nearest of ``levels`` values placed at the channel's own quantiles."""
    h, t, d = x.shape
    med = x.median(dim=1, keepdim=True).values
    dev = (x - med).abs()
    n_rare = int(rare * t)
    exact = torch.zeros_like(x, dtype=torch.bool)
    if n_rare > 0:
        cut = dev.topk(n_rare, dim=1).values[:, -1:, :]
        exact = dev >= cut
    probs = (torch.arange(levels, dtype=torch.float32, device=x.device) + 0.5) / levels
    body = x.masked_fill(exact, float("nan"))
    grid = torch.nanquantile(body.transpose(1, 2).reshape(h * d, t), probs, dim=1)   # (levels, H*D)
    grid = grid.T.reshape(h, d, levels).nan_to_num(0.0)
    nearest = (x[..., None] - grid[:, None, :, :]).abs().argmin(dim=-1)            # (H, T, D)
    coded = torch.gather(grid[:, None].expand(h, t, d, levels), 3, nearest[..., None])[..., 0]
    return torch.where(exact, x, coded)


class CodedKeyAttention(EvictionMethod):
    name = "coded_key_attention"
    query_window = 24
    question_queries = True
    levels = 8
    rare = 0.01
    pool = 5
    n_anchor = 4

    def setup(self, model: ModelInfo) -> None:
        self._layers = list(model.attention_layers)
        self._last = None
        self._calibrated = False

    def _track(self, view: LayerView) -> bool:
        layers = getattr(self, "_layers", None)
        if not layers:
            return False
        if view.layer == layers[0]:
            self._calibrated = True
        elif self._last is None or view.layer not in layers or layers.index(view.layer) != layers.index(self._last) + 1:
            self._calibrated = False
        self._last = view.layer
        return self._calibrated

    def _ranking(self, view: LayerView) -> torch.Tensor:
        free = _position_free(view, view.keys, undo=True)
        coded = _position_free(view, _code_channels(free, self.levels, self.rare), undo=False)
        h_kv, t, d = coded.shape
        g = view.model.group_size
        rows = view.queries.float().reshape(h_kv, -1, d)
        logits = torch.einsum("hnd,htd->hnt", rows, coded) * view.model.scale
        qpos = view.query_positions.repeat(g)
        logits = logits.masked_fill(view.positions[:, None, :] > qpos[None, :, None], float("-inf"))
        score = logits.softmax(dim=-1).nan_to_num(0.0).sum(dim=1) / g
        return F.max_pool1d(score[:, None], self.pool, stride=1, padding=self.pool // 2)[:, 0]

    def _plain(self, view: LayerView) -> torch.Tensor:
        return view.values.float().abs().sum(dim=-1) / (1.0 + view.keys.float().norm(dim=-1))

    def select(self, view: LayerView) -> Keep:
        calibrated = self._track(view)
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._ranking(view) if calibrated else self._plain(view)
        pinned = (view.positions >= int(view.query_positions.min())) | (view.positions < self.n_anchor)
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
