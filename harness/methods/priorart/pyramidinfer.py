"""PyramidInfer (Yang et al., ACL 2024 Findings, arXiv 2405.12532): at the prefill, each layer keeps its recent
sequence (the last ``recent_ratio`` of the prompt, plus the last token) and the context tokens those recent
queries attend to most ("pivotal context"), fewer in deeper layers. The official code (mutonix/pyramidinfer,
modeling_llama_pyramidinfer): the layer's attention averaged over *all* heads (one choice per layer), the recent
queries' rows weighted by linspace(1, distance_weight) (the newest weighs most) and averaged, the 4 first
(StreamingLLM sink) tokens forced; each layer keeps decay(l) of the previous layer's context, decay(l) falling
from 1 to ``decay_ratio`` on a cosine over the layers. Here the compounded schedule sets the layer budgets (the
product of decay(0..l), scaled to the mean budget, capped at the prompt), and inside a layer the recent sequence
and the sinks come first, the rest by score (a layer's view is the full cache: each layer chooses from all tokens,
where the official code chooses from what the layer below passed on). Defaults: the configs' recent_ratio 0.2,
decay 0.9 cosine, distance_weight 1.2, 4 sinks. Without queries: recency.
Settings: pa_pyramidinfer; pa_pyramidinfer?recent_ratio=0.1; pa_pyramidinfer?recent_ratio=0.05; pa_pyramidinfer?decay_ratio=0.8
"""

import math
from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView, ModelInfo, reference_attention


class PyramidInfer(EvictionMethod):
    name = "pa_pyramidinfer"
    paper: ClassVar[str] = "PyramidInfer"
    query_window = 1 << 20  # the recent sequence is a share of the prompt: every query handed over, the tail used
    recent_ratio = 0.2
    decay_ratio = 0.9
    distance_weight = 1.2
    n_sink = 4

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        layers = model.attention_layers
        if mean_budget >= n_tokens or not layers:
            return None  # board C (the cap is per layer) or nothing to evict
        total = model.n_layers
        keep, shape = 1.0, []
        for idx in range(total):
            keep *= (1 - self.decay_ratio) * (math.cos(math.pi * idx / total) + 1) / 2 + self.decay_ratio
            if idx in layers:
                shape.append(keep)
        scale = mean_budget * len(layers) / sum(shape)
        return [max(1, min(n_tokens, int(s * scale))) for s in shape]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        n_q = view.queries.shape[1]
        t_prompt = int(view.query_positions.max()) + 1
        recent = min(n_q, 1 + int(t_prompt * self.recent_ratio))  # the recent sequence and the last token
        qpos = view.query_positions[n_q - recent:]
        window = view.model.sliding_window if view.layer in view.model.sliding_layers else None
        attn = reference_attention(view.queries[:, n_q - recent:], view.keys, view.positions, qpos,
                                   view.model.group_size, view.valid, scale=view.model.scale, window=window)
        weights = torch.linspace(1.0, self.distance_weight, recent, device=attn.device)
        score = (attn * weights[None, :, None]).mean(dim=1).mean(dim=0)  # (T,): every head of the layer
        first_recent = int(view.query_positions[n_q - recent])
        forced = (view.positions < self.n_sink) | (view.positions >= first_recent)
        # forced tokens by recency (the newest first where the budget cannot hold them all), then the score
        scores = score[None, :].expand(view.n_kv_heads, -1).clone()
        scores = torch.where(forced, 1e9 + view.positions.float(), scores)
        scores[view.positions < self.n_sink] = 2e9
        return Keep.from_topk(scores, view.budget, view.valid)
