import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Sharp-query voting: question queries vote for context tokens with a weight that grows with how focused
    their attention is (inverse entropy), so diffuse queries count little."""

    name = "sharp_votes"
    question_queries = True
    query_window = 0
    kernel = 5

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if view.queries is None or b >= t:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        a = view.attention()                                           # (H_q, N, T), causal
        ent = -(a * a.clamp_min(1e-12).log()).sum(dim=-1)             # (H_q, N) nats
        w = 1.0 / (ent + 0.5)
        w = w / w.sum(dim=1, keepdim=True)                             # each head's queries share one vote
        votes = (a * w[..., None]).sum(dim=1)                          # (H_q, T)
        s = view.group(votes, "mean")
        s = F.max_pool1d(s[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        s = s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(s, b, view.valid)
