import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


def smooth(x, width):
    return F.avg_pool1d(x.unsqueeze(1), width, stride=1, padding=width // 2).squeeze(1)


class Method(EvictionMethod):
    query_window = 24
    width = 5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        heads = []
        for h in range(view.queries.shape[0]):
            att = view.attention(view.queries[h: h + 1])[0]     # (W, T), this query head
            heads.append(att.sum(dim=0))
        votes = view.group(torch.stack(heads), "mean")
        votes = smooth(votes, self.width)
        tail = view.positions >= view.query_positions.min()
        return Keep.from_topk(votes.masked_fill(tail, float("inf")), view.budget, view.valid)
