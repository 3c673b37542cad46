import torch

from harness.api import EvictionMethod, Keep, LayerView


class SegmentQuota(EvictionMethod):
    """The context is cut into equal segments; each segment's share of the budget follows the spread of its key
    norms (a segment of uniform keys is repetitive); inside a segment, window attention ranks the tokens."""

    query_window = 32
    n_segments = 16

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        n, b, heads = view.n_tokens, view.budget, view.n_kv_heads
        att = view.group(view.attention().sum(dim=1), "mean")                  # (H, T)
        norms = view.keys.float().norm(dim=-1)                                  # (H, T)
        window = view.positions >= view.query_positions.min()
        bounds = torch.linspace(0, n, self.n_segments + 1).long()
        keep = []
        for h in range(heads):
            spread = torch.stack([norms[h, bounds[i]:bounds[i + 1]].std().nan_to_num(0.0)
                                  for i in range(self.n_segments)])
            room = b - int(window[h].sum())
            quota = (spread / spread.sum().clamp_min(1e-9) * room).floor().long().clamp(min=1)
            chosen = [window[h].nonzero().flatten()]
            for i in range(self.n_segments):
                lo, hi = int(bounds[i]), int(bounds[i + 1])
                seg = att[h, lo:hi].masked_fill(window[h, lo:hi], float("-inf"))
                q = min(int(quota[i]), int((~window[h, lo:hi]).sum()))
                if q > 0:
                    chosen.append(seg.topk(q).indices + lo)
            idx = torch.cat(chosen).unique()[: b]
            keep.append(idx.sort().values)
        return Keep(tuple(keep))
