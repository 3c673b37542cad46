"""Stanza relay (board A): keep whole stanzas of the context, rated once per band of layers.

The prompt is cut into stanzas of ``stanza`` consecutive tokens. The question rows (and the closing rows of the
prompt) rate each stanza by the attention they pay its tokens; the best stanzas are kept whole, so a fact is
kept with the words around it. Neighbouring layers read the context in much the same places, so the first layer
of each band of ``band`` layers rates the stanzas and the other layers of the band relay its pick; bands low in
the stack get a larger share of the budget than bands high in it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class _Relay:
    """What the leading layer of a band picked, for the layers after it in the same pass."""

    def __init__(self) -> None:
        self.picks: dict[int, tuple[tuple[int, int, int], tuple[torch.Tensor, ...]]] = {}
        self.last_layer = -10

    def fetch(self, band: int, rank: int, shape: tuple[int, int, int]) -> tuple[torch.Tensor, ...] | None:
        got = self.picks.get(band)
        if got is None or got[0] != shape or self.last_layer != rank - 1:
            return None
        return got[1]


class StanzaRelay(EvictionMethod):
    name = "stanza_relay"
    query_window = 8
    question_queries = True
    stanza = 8
    band = 3
    tilt = 0.5  # the lowest band gets (1 + tilt) x the mean budget, the highest (1 - tilt) x

    def __init__(self) -> None:
        self.relay = _Relay()
        self.order: tuple[int, ...] = ()

    def setup(self, model: ModelInfo) -> None:
        self.order = tuple(model.attention_layers)

    def _rank_of(self, layer: int) -> int:
        return self.order.index(layer) if layer in self.order else layer

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        layers = model.attention_layers
        n_bands = -(-len(layers) // self.band)
        if n_bands < 2:
            return None
        edges = torch.arange(1, n_bands) * self.band
        bands = torch.bucketize(torch.arange(len(layers)), edges, right=True)
        weight = 1 + self.tilt - 2 * self.tilt * bands.float() / (n_bands - 1)
        out = [max(1, min(n_tokens, int(mean_budget * float(w)))) for w in weight]
        while sum(out) > mean_budget * len(layers):  # flooring keeps this rare; trim from the top band
            j = max(range(len(out)), key=lambda i: (out[i], i))
            out[j] -= 1
        return out

    def _rate(self, view: LayerView, budget: int) -> tuple[torch.Tensor, ...]:
        h, t = view.n_kv_heads, view.n_tokens
        attn = view.attention()  # (H_q, N, T)
        tok = view.group(attn.sum(dim=1), "mean")  # (H_kv, T)
        assert view.query_positions is not None
        held = view.positions >= view.query_positions.min()  # the rows that rated: kept as they are
        tok = tok.masked_fill(held, 0.0)
        s = self.stanza
        pad = (-t) % s
        rated = F.pad(tok, (0, pad)).unfold(-1, s, s).sum(-1)  # (H_kv, n_stanzas)
        out = []
        for i in range(h):
            fixed = torch.nonzero(held[i]).flatten()[-budget:] if budget > 0 else held.new_zeros(0, dtype=torch.long)
            room = budget - fixed.numel()
            chosen = [fixed]
            if room > 0:
                n_whole = min(room // s, rated.shape[1])
                best = rated[i].argsort(descending=True)[:n_whole]
                span = (best[:, None] * s + torch.arange(s)).flatten()
                span = span[(span < t)]
                span = span[~held[i][span]]
                chosen.append(span)
                left = room - span.numel()
                if left > 0:  # a part-stanza: the best single tokens not taken yet
                    rest = tok[i].clone()
                    rest[span] = float("-inf")
                    rest[held[i]] = float("-inf")
                    chosen.append(rest.topk(min(left, int(torch.isfinite(rest).sum()))).indices)
            out.append(torch.cat(chosen).unique().sort().values)
        return tuple(out)

    def select(self, view: LayerView) -> Keep:
        budget = view.budget
        if budget >= view.n_tokens or view.queries is None or view.valid is not None:
            self.relay.last_layer = -10
            return Keep.from_topk(view.positions.float(), budget, view.valid)
        rank = self._rank_of(view.layer)
        band, leads = rank // self.band, rank % self.band == 0
        shape = (view.n_tokens, budget, view.n_kv_heads)
        picks = None if leads else self.relay.fetch(band, rank, shape)
        if picks is None:
            picks = self._rate(view, budget)
            self.relay.picks[band] = (shape, picks)
        self.relay.last_layer = rank
        return Keep(picks)
