"""Staged narrowing (board A).

Deep layers need less of the context than shallow ones: by the middle of the network what a token said has been
mixed into its neighbours, so a deep layer loses little if it no longer holds it. The layers are split into four
equal stages with budgets 1.6, 1.2, 0.8 and 0.4 times the mean (the mean is preserved). The first layer of each
stage chooses which context survives, only among what the previous stage kept, so the kept sets are nested and
shrink with depth; the other layers of the stage keep the same set. Choices are made in units of 16 consecutive
tokens: a unit is rated by the mean, over its tokens, of the question's attention (question span plus the last 8
prompt queries, causal, summed over the queries, averaged over all query heads of the layer), and units are taken
best first, the last one cut to the tokens with the most attention. The question span and the first 4 tokens are
kept at every layer.
"""

import torch

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class StagedNarrowing(EvictionMethod):
    name = "staged_narrowing"
    query_window = 8
    question_queries = True
    stage_scale = (1.6, 1.2, 0.8, 0.4)
    unit = 16
    n_sink = 4

    def setup(self, model: ModelInfo) -> None:
        self._order = tuple(model.attention_layers)
        self._trail = None

    def _stage(self, layer: int) -> int:
        order = getattr(self, "_order", ()) or (layer,)
        at = order.index(layer) if layer in order else 0
        return min(len(self.stage_scale) - 1, at * len(self.stage_scale) // max(1, len(order)))

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        self._order = tuple(model.attention_layers)
        n = len(self._order)
        raw = [self.stage_scale[self._stage(layer)] for layer in self._order]
        norm = n / sum(raw)                                                  # stages of unequal length: keep the mean
        return [max(1, min(n_tokens, int(mean_budget * r * norm))) for r in raw]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        pos = view.positions[0]
        sig = (view.n_tokens, int(pos.max()))
        trail = getattr(self, "_trail", None)
        if trail is None or trail[0] != sig or view.layer <= trail[1]:
            trail = (sig, -1, None, None)                                   # a new compression
        _, _, stage, kept = trail
        now = self._stage(view.layer)
        first_q = int(view.query_positions.min())
        heard = view.attention(reduce="sum").mean(dim=0)                   # (T,)
        if kept is None or stage != now:
            kept = self._narrow(pos, heard, first_q, view.budget, kept)
        idx = torch.nonzero(torch.isin(pos, kept)).flatten()
        if idx.numel() > view.budget:
            pinned = (pos[idx] < self.n_sink) | (pos[idx] >= first_q)
            idx = idx[heard[idx].masked_fill(pinned, float("inf")).topk(view.budget).indices].sort().values
        self._trail = (sig, view.layer, now, pos[idx])
        return Keep.same_for_all_heads(idx, view.n_kv_heads)

    def _narrow(self, pos, heard, first_q, budget, before):
        t = pos.numel()
        alive = torch.ones(t, dtype=torch.bool, device=pos.device) if before is None else torch.isin(pos, before)
        keep = (pos < self.n_sink) | (pos >= first_q)
        room = budget - int(keep.sum())
        ctx = int((pos < first_q).sum())
        units = []
        for a in range(0, ctx, self.unit):
            members = torch.arange(a, min(ctx, a + self.unit), device=pos.device)
            members = members[alive[members] & ~keep[members]]
            if members.numel():
                units.append((float(heard[members].mean()), members))
        for _, members in sorted(units, key=lambda u: -u[0]):
            if room <= 0:
                break
            if members.numel() > room:
                members = members[heard[members].topk(room).indices]
            keep[members] = True
            room -= members.numel()
        return pos[keep]
