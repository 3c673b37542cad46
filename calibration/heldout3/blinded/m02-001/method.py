import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Relative salience: how far above a uniform share any recent query lifts a token."""

    name = "relative_salience"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        probs = view.attention()                                   # (Hq, N, T)
        n_q = probs.shape[1]
        seen = (view.query_positions.to(probs.device).float() + 1.0)
        lift = torch.zeros(probs.shape[0], probs.shape[2], device=probs.device)
        for i in range(n_q):                                       # one query row at a time
            lift = torch.maximum(lift, probs[:, i, :] * seen[i])
        score = view.group(lift, "max")
        n_tok = score.shape[-1]
        score[:, max(0, n_tok - n_q):] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
