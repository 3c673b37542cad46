"""Diverse Repeat: reconstruction-pass importance, selected greedily with a redundancy penalty (MMR)."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def mmr(score: torch.Tensor, keys: torch.Tensor, k: int, lam: float) -> torch.Tensor:
    """Greedy maximal-marginal-relevance selection of ``k`` rows: at each step take the row maximising
    score - lam * (its highest cosine similarity to a row already taken)."""
    unit = F.normalize(keys.float(), dim=-1)
    closest = torch.zeros_like(score)
    taken = torch.zeros_like(score, dtype=torch.bool)
    picks = []
    for _ in range(k):
        gain = (score - lam * closest).masked_fill(taken, float("-inf"))
        i = int(gain.argmax())
        picks.append(i)
        taken[i] = True
        closest = torch.maximum(closest, unit @ unit[i])
    return torch.tensor(picks, dtype=torch.long, device=score.device)


class DiverseRepeat(EvictionMethod):
    name = "diverse_repeat"
    reconstruction_queries = True
    lam = 0.3
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is not None:
            imp = view.group(view.attention(view.queries, reduce="max"), "max")   # (H_kv, T)
        else:
            imp = -view.keys.float().norm(dim=-1)                                   # query-free fallback
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            b = min(view.budget, idx.numel())
            s = imp[h, idx]
            s = (s - s.min()) / (s.max() - s.min()).clamp_min(1e-9)                 # to [0, 1]
            sink = view.positions[h, idx] < self.n_sink
            n_sink = min(b, int(sink.sum()))
            first = torch.nonzero(sink).flatten()[:n_sink]
            s = s.masked_fill(sink, float("-inf")) if n_sink else s
            rest = mmr(s, view.keys[h, idx], b - n_sink, self.lam) if b > n_sink else first[:0]
            out.append(idx[torch.cat([first, rest])].sort().values)
        return Keep(tuple(out))
