"""Rolling-pot distillation (board B_offline): the context is read front to back through a fixed-size pot; each
time the pot fills up it is distilled down to the budget by the attention of the model's own re-reading pass,
renormalised over what is in the pot, so every token only competes with its current pot-mates and the memory of
the compression itself stays bounded."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _pot_scores(rows: torch.Tensor, keys: torch.Tensor, scale: float) -> torch.Tensor:
    """(g*M, D) reading queries, (P, D) pot keys -> (P,): mean softmax attention over the pot."""
    logits = rows @ keys.T * scale
    return logits.softmax(dim=-1).mean(dim=0)


class RollingPotDistillation(EvictionMethod):
    name = "rolling_pot_distillation"
    reconstruction_queries = True
    pot_factor = 2.0       # the pot holds this many times the budget before it is distilled
    n_readers = 96         # re-reading queries sampled (evenly) for the distillation
    n_sink = 4

    def _readers(self, view: LayerView) -> torch.Tensor:
        q = view.queries.float()                                                 # (H_q, N, D)
        n = q.shape[1]
        if n > self.n_readers:
            pick = torch.linspace(0, n - 1, self.n_readers, device=q.device).round().long()
            q = q[:, pick]
        return q

    def _distil_head(self, keys: torch.Tensor, readers: torch.Tensor, budget: int, pot: int,
                     scale: float) -> torch.Tensor:
        t = keys.shape[0]
        held = torch.arange(0, 0, dtype=torch.long, device=keys.device)
        nxt = 0
        while nxt < t:
            take = max(1, pot - held.numel())
            held = torch.cat([held, torch.arange(nxt, min(t, nxt + take), device=keys.device)])
            nxt += take
            if held.numel() > budget and (held.numel() >= pot or nxt >= t):
                score = _pot_scores(readers, keys[held], scale)
                score[held < self.n_sink] = float("inf")
                keep = score.topk(budget).indices
                held = held[keep].sort().values
        return held

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        readers = self._readers(view)
        g = view.model.group_size
        valid = view.valid_mask()
        budget = view.budget
        pot = max(budget + 1, int(self.pot_factor * budget))
        out = []
        for h in range(view.n_kv_heads):
            real = torch.nonzero(valid[h]).flatten()
            rows = readers[h * g:(h + 1) * g].reshape(-1, readers.shape[-1])
            chosen = self._distil_head(view.keys[h, real].float(), rows, min(budget, real.numel()), pot,
                                       view.model.scale)
            out.append(real[chosen].sort().values)
        return Keep(tuple(out))
