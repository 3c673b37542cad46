import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 32
    reach = 7
    safety = 0.2

    def _relevance(self, view: LayerView) -> torch.Tensor:
        g = view.model.group_size
        qpos = view.query_positions
        cells = []
        for kv in range(view.n_kv_heads):
            q = view.queries[kv * g:(kv + 1) * g].float()                  # (g, W, D)
            k = view.keys[kv].float()                                       # (T, D)
            logits = (q @ k.T) * view.model.scale                           # (g, W, T)
            future = view.positions[kv][None, :] > qpos[:, None]            # (W, T)
            logits = logits.masked_fill(future[None], float("-inf"))
            cells.append(logits.softmax(dim=-1).sum(dim=1).mean(dim=0))     # (T,)
        rel = torch.stack(cells)[:, None, :]
        rel = F.max_pool1d(rel, self.reach, stride=1, padding=self.reach // 2)[:, 0, :]
        return rel.masked_fill(view.positions >= qpos.min(), float("inf"))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rel = self._relevance(view)
        heads, n = rel.shape
        total = view.budget * heads
        w = int((view.positions[0] >= view.query_positions.min()).sum())
        each = min(w + int(self.safety * view.budget), total // heads)
        order = rel.argsort(dim=-1, descending=True)
        sure = order[:, :each]
        left = rel.clone()
        for h in range(heads):
            left[h, sure[h]] = float("-inf")
        flat = left.view(-1).argsort(descending=True)[: total - each * heads]
        keep = []
        for h in range(heads):
            mine = flat[(flat >= h * n) & (flat < (h + 1) * n)] - h * n
            keep.append(torch.cat([sure[h], mine]).unique())
        return Keep(tuple(keep))
