import torch
import torch.nn.functional as F
from harness.api import EvictionMethod, Keep, LayerView

class Method(EvictionMethod):
    """The submitted eviction method."""
    name = 'method'
    query_window = 32
    p1 = 7
    p2 = 'max'

    def scores(self, view: LayerView) -> torch.Tensor:
        if view.queries is None:
            return view.positions.float()
        assert view.query_positions is not None
        attn = view.attention()
        scores = view.group(attn.sum(dim=1), 'mean')
        p5 = F.max_pool1d if self.p2 == 'max' else F.avg_pool1d
        scores = p5(scores[:, None, :], self.p1, stride=1, padding=self.p1 // 2)[:, 0, :]
        return scores.masked_fill(view.positions >= view.query_positions.min(), float('inf'))

    def select(self, view: LayerView) -> Keep:
        scores = self.scores(view)
        h, t = scores.shape
        valid = view.valid_mask()
        scores = scores.masked_fill(~valid, float('-inf'))
        total = min(view.budget * h, int(valid.sum()))
        window = int(torch.isinf(scores[0]).logical_and(scores[0] > 0).sum())
        floor = int(self.p3 * view.budget)
        floor = max(window, floor) if self.p4 else window + floor
        guaranteed = min(floor, total // h, int(valid.sum(dim=1).min()))
        p6 = torch.empty(h, 0, dtype=torch.long, device=scores.device)
        forced = scores.topk(guaranteed, dim=-1).indices if guaranteed else p6
        rest = scores.scatter(1, forced, float('-inf'))
        flat = rest.flatten().topk(total - guaranteed * h).indices
        extra = [flat[flat // t == i] % t for i in range(h)]
        return Keep(tuple((torch.sort(torch.cat([forced[i], extra[i]])).values for i in range(h))))
    p3 = 0.2
    p4 = False
