"""Foresight-C2: Foresight-C's extrapolated attention, minus a redundancy penalty among keys.

Reasoning traces repeat themselves; two near-identical keys waste a slot. On top of Foresight-C's
score (EMA level + horizon * EMA trend of the attention from recent decode queries), each token is
penalised by its highest cosine similarity to the other cached keys of its head, as in R-KV's
importance-minus-redundancy rule: score = lam * z(foresight) - (1 - lam) * z(redundancy).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _z(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    vals = x.masked_fill(~valid, 0.0)
    count = valid.sum(dim=-1, keepdim=True).clamp_min(1)
    mean = vals.sum(dim=-1, keepdim=True) / count
    var = ((vals - mean) ** 2).masked_fill(~valid, 0.0).sum(dim=-1, keepdim=True) / count
    return (x - mean) / var.sqrt().clamp_min(1e-6)


class ForesightC2(EvictionMethod):
    name = "foresight_c2"
    query_window = 16
    n_sink = 4
    n_recent = 64
    decay = 0.8
    horizon = 4.0
    lam = 0.7  # weight of importance against redundancy

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        level = view.recall("level")
        trend = view.recall("trend")
        if view.queries is not None:
            now = view.group(view.attention().mean(dim=1), "mean")
            new_level = self.decay * level + (1 - self.decay) * now
            trend = self.decay * trend + (1 - self.decay) * (new_level - level)
            level = new_level
        view.remember("level", level)
        view.remember("trend", trend)
        keys = torch.nn.functional.normalize(view.keys.float(), dim=-1)
        sim = torch.einsum("htd,hsd->hts", keys, keys)
        eye = torch.eye(sim.shape[-1], dtype=torch.bool)
        sim = sim.masked_fill(eye | ~valid[:, None, :], -1.0)
        redundancy = sim.amax(dim=-1)
        score = self.lam * _z(level + self.horizon * trend, valid) - (1 - self.lam) * _z(redundancy, valid)
        score[:, : self.n_sink] = float("inf")
        score[:, -self.n_recent :] = float("inf")
        return Keep.from_topk(score, view.budget, valid)
