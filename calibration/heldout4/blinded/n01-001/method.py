import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _recency(view: LayerView) -> Keep:
    return Keep.from_topk(view.positions.float(), view.budget, view.valid)


class Method(EvictionMethod):
    """Forward-shifted probes: the context's closing queries, moved to where the answer will be read."""

    name = "forward_shift"
    query_window = 48
    smooth = 5

    def _shifted_probes(self, view: LayerView) -> torch.Tensor:
        q = view.queries.float()
        here = view.query_positions.to(q.device)
        flat = view.rotate(q, -here)                       # back to the unrotated frame
        start = int(view.positions.max().item()) + 1      # first position that will be generated
        ahead = start + torch.arange(q.shape[1], device=q.device)
        return view.rotate(flat, ahead)                    # re-placed after the context

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.queries is None or view.budget >= n:
            return _recency(view)
        probes = self._shifted_probes(view)
        # every probe sits after the whole context, so nothing needs a causal mask
        weights = view.attention(probes, reduce="sum")     # (H_q, T)
        per_kv = view.group(weights, "mean")
        k = self.smooth
        per_kv = F.avg_pool1d(per_kv.unsqueeze(1), k, stride=1, padding=k // 2, count_include_pad=False).squeeze(1)
        tail = view.positions >= view.query_positions.min()
        per_kv = torch.where(tail, torch.full_like(per_kv, float("inf")), per_kv)
        return Keep.from_topk(per_kv, view.budget, view.valid)
