"""Passage-granular question retention (board A).

Long contexts are made of passages, and an answer usually needs a passage whole, not a scatter of its most-attended
tokens. We cut the context where the key stream changes direction most sharply (one minus the cosine of
neighbouring keys, averaged over KV heads; cuts at least 32 tokens apart, about one per 48 tokens), rate every
passage by the question's mean attention over its tokens (question span plus the last 16 prompt queries, causal,
summed over the queries, averaged over all query heads) and fill the budget with whole passages, best first.
The question span and the first 4 tokens are always kept; the same set is kept in every KV head of the layer.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _cuts(keys: torch.Tensor, upto: int, spacing: int, every: int) -> list[int]:
    k = torch.nn.functional.normalize(keys[:, :upto].float(), dim=-1)
    turn = torch.zeros(upto, device=keys.device)
    if upto > 1:
        turn[1:] = 1.0 - (k[:, 1:] * k[:, :-1]).sum(-1).mean(0)
    chosen: list[int] = []
    for p in turn.argsort(descending=True).tolist():
        if len(chosen) >= max(1, upto // every):
            break
        if p < spacing or upto - p < spacing:
            continue
        if all(abs(p - c) >= spacing for c in chosen):
            chosen.append(p)
    return sorted(chosen)


class PassageRetention(EvictionMethod):
    name = "passage_retention"
    query_window = 16
    question_queries = True
    spacing = 32
    every = 48
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        t = view.n_tokens
        pos = view.positions[0]
        first_q = int(view.query_positions.min())
        ctx_end = int((pos < first_q).sum())
        heard = view.attention(reduce="sum").mean(dim=0)                  # (T,)
        bounds = [0, *_cuts(view.keys, ctx_end, self.spacing, self.every), ctx_end]
        passages = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1) if bounds[i + 1] > bounds[i]]
        keep = torch.zeros(t, dtype=torch.bool, device=pos.device)
        keep[ctx_end:] = True
        keep[: min(self.n_sink, t)] = True
        room = view.budget - int(keep.sum())
        if room < 0:
            tail = torch.arange(t - view.budget, t, device=pos.device)
            return Keep.same_for_all_heads(tail, view.n_kv_heads)
        rated = sorted(passages, key=lambda ab: -float(heard[ab[0]:ab[1]].mean()))
        for a, b in rated:
            need = int((~keep[a:b]).sum())
            if need <= room:
                keep[a:b] = True
                room -= need
        if room > 0:
            lead = torch.nonzero(~keep).flatten()[:room]
            keep[lead] = True
        return Keep.same_for_all_heads(torch.nonzero(keep).flatten(), view.n_kv_heads)
