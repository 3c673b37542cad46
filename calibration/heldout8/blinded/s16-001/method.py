"""LoRC's progressive low-rank strategy used to rank tokens (board B_online).

Port of the progressive compression strategy of LoRC (Zhang, Wang, Liu, Wang, Cheng, Zhang, Shen, 2024, "LoRC: Low-Rank
Compression for LLMs KV Cache with a Progressive Compression Strategy", arXiv 2410.03111). LoRC truncates the SVD of
each layer's key/value projection and chooses each layer's rank from cumulative condition numbers, so that shallow
layers, whose errors are amplified by every layer above them, are compressed least. Here the keys are rebuilt at that
progressive rank and the rebuilt keys are used to decide which tokens to keep, SnapKV-style (arXiv 2404.14469: the last
32 context queries' causal attention, averaged over the window and the KV head's query heads, average-pooled over 5
tokens; the window itself is kept).

Deviations, stated:
* the interface exposes no weights, so the SVD is taken of each KV head's cached keys (T x D) instead of W_k;
* a layer's condition number (largest / smallest of its top-``probe`` singular values, mean over KV heads) is only
  known once the layer has been seen, and LoRC's cumulative product runs from a layer to the last one; we therefore use
  the condition numbers measured at the previous compression (before the first one, ranks fall linearly with depth);
* LoRC stores the low-rank cache; we only rank with it and keep full-precision entries.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class LoRCProgressiveRanking(EvictionMethod):
    name = "lorc_progressive_ranking"
    query_window = 32
    kernel = 5
    min_rank_share = 0.25      # the deepest layer keeps this share of the head dimension
    max_rank_share = 1.0       # the shallowest keeps all of it
    probe = 16                 # singular values used for the condition number

    def __init__(self) -> None:
        self._kappa: dict[int, float] = {}
        self._frozen: dict[int, float] = {}

    def _rank(self, view: LayerView, d: int) -> int:
        layers = list(view.model.attention_layers)
        depth = layers.index(view.layer) if view.layer in layers else 0
        if len(self._frozen) == len(layers) and len(layers) > 1:
            logs = [math.log(max(self._frozen[i], 1.0)) for i in layers]
            cum = [sum(logs[j:]) for j in range(len(layers))]      # cumulative from each layer to the last
            top, low = max(cum), min(cum)
            frac = (cum[depth] - low) / (top - low) if top > low else 1.0
        else:
            frac = 1.0 - depth / max(1, len(layers) - 1)
        share = self.min_rank_share + (self.max_rank_share - self.min_rank_share) * frac
        return max(1, min(d, int(round(share * d))))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h_kv, t, d = view.keys.shape
        r = self._rank(view, d)
        keys = view.keys.float()
        low = torch.zeros_like(keys)
        kappas = []
        for h in range(h_kv):
            u, s, vh = torch.linalg.svd(keys[h], full_matrices=False)
            low[h] = (u[:, :r] * s[:r]) @ vh[:r]
            top = s[: min(self.probe, s.numel())]
            kappas.append(float(top[0] / top[-1].clamp_min(1e-6)))
        self._kappa[view.layer] = sum(kappas) / len(kappas)
        if len(self._kappa) == len(view.model.attention_layers):
            self._frozen, self._kappa = dict(self._kappa), {}
        g = view.model.group_size
        q = view.queries.float().reshape(h_kv, g, -1, d)
        lg = torch.einsum("hgnd,htd->hgnt", q, low) * view.model.scale
        mask = view.positions[:, None, None, :] > view.query_positions.to(low.device)[None, None, :, None]
        if view.valid is not None:
            mask = mask | ~view.valid[:, None, None, :]
        probs = lg.masked_fill(mask, float("-inf")).softmax(-1).nan_to_num(0.0)
        score = probs.mean(2).mean(1)
        score = F.avg_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        score = score.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
