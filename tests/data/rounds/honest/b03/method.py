"""Second opinion from the layer below (board B_online, query-agnostic prefill).

Query-agnostic SnapKV scores each layer on its own closing window. Layers are called bottom-up, and the method
object lives for the whole compression pass, so a layer can see which positions the layer below chose to keep.
We add a soft bonus: a token whose position the previous attention layer kept (in any KV head) gets `bonus` times
the mean non-window score of its head. The previous layer's vote can break near-ties but cannot force a token in.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) in its query-agnostic form (as evaluated in KVzip, arXiv
2505.23416). Reusing a neighbouring layer's selection is related to ChunkKV's layer-wise index reuse (Liu et al.,
2025, arXiv 2502.00299), which copies indices outright; a soft additive vote is our change, and a small one.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class SecondOpinionSnap(EvictionMethod):
    name = "second_opinion_snap"
    query_window = 32
    kernel = 5
    bonus = 0.5

    def setup(self, model: ModelInfo) -> None:
        self._order = list(model.attention_layers)
        self._prev: tuple[int, torch.Tensor] | None = None

    def _previous_positions(self, layer: int) -> torch.Tensor | None:
        order = getattr(self, "_order", [])
        if self._prev is None or layer not in order or order.index(layer) == 0:
            return None
        prev_layer, kept = self._prev
        return kept if order.index(prev_layer) == order.index(layer) - 1 else None

    def select(self, view: LayerView) -> Keep:
        if not hasattr(self, "_prev"):
            self._prev = None
        if view.queries is None or view.budget >= view.n_tokens:
            keep = Keep.from_topk(view.positions.float(), view.budget, view.valid)
        else:
            s = view.group(view.attention().sum(dim=1), "mean")
            s = F.avg_pool1d(s[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                             count_include_pad=False)[:, 0]
            window = view.positions >= view.query_positions.min()
            valid = view.valid_mask()
            body = valid & ~window
            mean = (s * body).sum(dim=1, keepdim=True) / body.sum(dim=1, keepdim=True).clamp_min(1)
            prev = self._previous_positions(view.layer)
            if prev is not None:
                voted = torch.isin(view.positions, prev.to(view.positions.device))
                s = s + self.bonus * mean * voted.float()
            keep = Keep.from_topk(s.masked_fill(window, float("inf")), view.budget, view.valid)
        kept_pos = torch.cat([view.positions[h][idx] for h, idx in enumerate(keep.indices)]).unique()
        self._prev = (view.layer, kept_pos.cpu())
        return keep
