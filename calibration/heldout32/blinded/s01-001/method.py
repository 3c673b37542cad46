"""Recent Peak: on board C, each token is scored by the highest attention it received from any query of the
current round or of the round before (the peak, not the sum), so a token that stopped being read two rounds ago
loses its place however much it was read earlier. Sinks and the newest tokens are kept."""

import torch

from harness import EvictionMethod, Keep, LayerView


class RecentPeak(EvictionMethod):
    name = "recent_peak"
    query_window = 64
    sinks = 4
    newest = 16

    def _peak(self, view: LayerView) -> torch.Tensor:
        if view.queries is None:
            return torch.zeros(view.keys.shape[:2], device=view.keys.device)
        last = view.state.get("last_q", -1)
        fresh = view.query_positions > last
        if not bool(fresh.any()):
            fresh = torch.ones_like(fresh)
        q = view.queries[:, fresh]
        qpos = view.query_positions[fresh]
        k = view.keys.float()
        h_kv, t, d = k.shape
        g = view.model.group_size
        logits = torch.matmul(q.float().reshape(h_kv, g * q.shape[1], d), k.transpose(1, 2)) * view.model.scale
        logits = logits.view(h_kv, g, q.shape[1], t)
        hide = view.positions[:, None, None, :] > qpos[None, None, :, None]
        if view.valid is not None:
            hide = hide | ~view.valid[:, None, None, :]
        probs = logits.masked_fill(hide, float("-inf")).softmax(-1).nan_to_num(0.0)
        view.state["last_q"] = int(view.query_positions.max())
        return probs.amax(dim=2).amax(dim=1)

    def select(self, view: LayerView) -> Keep:
        now = self._peak(view)
        before = view.recall("peak_now")
        view.remember("peak_now", now)
        score = torch.maximum(now, before)
        valid = view.valid_mask()
        counts = valid.sum(1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, : min(self.sinks, n)] = float("inf")
            score[h, max(0, n - self.newest): n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
