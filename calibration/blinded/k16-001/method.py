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
        p3 = F.max_pool1d if self.p2 == 'max' else F.avg_pool1d
        scores = p3(scores[:, None, :], self.p1, stride=1, padding=self.p1 // 2)[:, 0, :]
        return scores.masked_fill(view.positions >= view.query_positions.min(), float('inf'))

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        return Keep.from_topk(self.scores(view), view.budget, view.valid)
