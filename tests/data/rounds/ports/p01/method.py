"""Ballot reserve (board A): the question's own rows cast ballots over the context, and part of the budget is
set aside for a weighted lottery so that the selection does not collapse onto a handful of spikes."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _tally(view: LayerView) -> torch.Tensor:
    """(H_kv, T): total ballot mass each entry receives from the handed-over rows, pooled over a group."""
    ballots = view.attention()                    # (H_q, N, T)
    per_head = ballots.sum(dim=1)                 # every voter counts once
    return view.group(per_head, "sum")


class BallotReserve(EvictionMethod):
    name = "ballot_reserve"
    question_queries = True
    query_window = 8
    lottery_share = 0.3      # part of each head's budget drawn by lottery
    heat = 1.0               # lottery temperature on the tally
    seed = 20240817

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        tally = _tally(view)
        live = view.valid_mask()
        gen = torch.Generator(device="cpu").manual_seed(self.seed + view.layer)
        picks = []
        for h in range(view.n_kv_heads):
            row = tally[h].float().cpu()
            ok = live[h].cpu()
            quota = min(view.budget, int(ok.sum()))
            draws = int(round(quota * self.lottery_share))
            sure = quota - draws
            ranked = row.masked_fill(~ok, float("-inf"))
            chosen = torch.zeros_like(ok)
            if sure > 0:
                chosen[torch.topk(ranked, sure).indices] = True
            if draws > 0:
                weight = row.clamp_min(0).pow(1.0 / self.heat) + 1e-9
                weight = weight.masked_fill(chosen | ~ok, 0.0)
                draws = min(draws, int((weight > 0).sum()))
                if draws > 0:
                    chosen[torch.multinomial(weight, draws, replacement=False, generator=gen)] = True
            picks.append(chosen.nonzero().flatten().to(view.keys.device))
        return Keep(tuple(picks))
