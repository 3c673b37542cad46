import torch
import torch.nn.functional as F
from harness.api import EvictionMethod, Keep, LayerView

class Method(EvictionMethod):
    """The submitted eviction method."""
    name = 'method'
    query_window = 8
    p1 = 7
    p2 = 0.07
    p3 = 0.5

    def _helper1(self, keys: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        k = F.normalize(keys.float(), dim=-1)
        sim = torch.einsum('htd,hsd->hts', k, k)
        n = sim.shape[-1]
        pair = valid[:, :, None] & valid[:, None, :]
        sim = sim.masked_fill(~pair | torch.eye(n, dtype=torch.bool, device=sim.device), 0.0)
        similar = sim > self.p3
        idx = torch.arange(n, device=sim.device).expand_as(sim)
        newest = torch.where(similar, idx, -1).amax(dim=-1)
        rows = newest >= 0
        p4, p5 = torch.nonzero(rows, as_tuple=True)
        sim[p4, p5, newest[rows]] = 0.0
        mean = sim.sum(dim=1) / valid.sum(dim=1, keepdim=True).clamp_min(1)
        return mean.masked_fill(~valid, float('-inf')).softmax(dim=-1)

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()
        imp = view.group(attn.mean(dim=1), 'mean')
        imp = F.max_pool1d(imp[:, None], self.p1, stride=1, padding=self.p1 // 2)[:, 0]
        score = self.p2 * imp - (1 - self.p2) * self._helper1(view.keys, valid)
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - self.query_window):c] = float('inf')
        return Keep.from_topk(score, view.budget, view.valid)
