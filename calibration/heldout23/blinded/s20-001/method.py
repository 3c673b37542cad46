"""Terraced block sieve (board B_online, query-agnostic prefill).

The layers are split into four terraces. The first terrace holds the most, each deeper terrace less (the mean
stays the board's budget). At the first layer of a terrace the context is cut into 32-token blocks and the
blocks are ranked by how much the closing rows attend to them; the terrace keeps the best blocks that fit, and
only among the blocks the previous terrace kept, so what a shallow terrace drops never comes back deeper.
Layers inside a terrace reuse its block list; any slots left over go to the best single tokens of the layer.
The opening block and the closing rows are always in.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class TerracedSieve(EvictionMethod):
    name = "terraced_sieve"
    query_window = 16
    block = 32
    terraces = (1.55, 1.15, 0.8, 0.5)   # relative budget per terrace, mean 1

    def setup(self, model) -> None:
        self._layers = tuple(model.attention_layers) or tuple(range(model.n_layers))
        self._plan: dict = {}

    def _terrace_of(self, layer: int) -> int:
        layers = getattr(self, "_layers", None) or (layer,)
        i = layers.index(layer) if layer in layers else 0
        return min(len(self.terraces) - 1, i * len(self.terraces) // max(1, len(layers)))

    def layer_budgets(self, mean_budget: int, n_tokens: int, model):
        layers = tuple(model.attention_layers) or tuple(range(model.n_layers))
        n = len(layers)
        tiers = [min(len(self.terraces) - 1, i * len(self.terraces) // n) for i in range(n)]
        raw = [self.terraces[t] for t in tiers]
        scale = n / sum(raw)
        out = [max(1, min(n_tokens, int(mean_budget * r * scale))) for r in raw]
        while sum(out) > mean_budget * n:     # rounding and clipping never overspend
            j = max(range(n), key=lambda i: out[i])
            out[j] -= 1
        return out

    def _block_mass(self, a: torch.Tensor, ok: torch.Tensor) -> torch.Tensor:
        """(H_kv, T) token mass -> (H_kv, blocks) block mass."""
        a = a * ok
        t = a.shape[-1]
        nb = -(-t // self.block)
        a = torch.nn.functional.pad(a, (0, nb * self.block - t))
        return a.unfold(-1, self.block, self.block).sum(-1)                # (H_kv, nb)

    def select(self, view: LayerView) -> Keep:
        if not hasattr(self, "_plan"):
            self.setup(view.model)
        if view.layer == (self._layers[0] if self._layers else view.layer):
            self._plan = {}                                                  # a new context starts
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        hk, t = view.n_kv_heads, view.n_tokens
        tier = self._terrace_of(view.layer)
        nb = -(-t // self.block)
        tok = view.group(view.attention(reduce="sum"), "max")              # (H_kv, T)
        mass = self._block_mass(tok, view.valid_mask())
        qmin = int(view.query_positions.min())
        entry = self._plan.get(tier)
        if entry is None or entry[0] != (t,):
            prev = None
            for back in range(tier - 1, -1, -1):
                if back in self._plan and self._plan[back][0] == (t,):
                    prev = self._plan[back][1]
                    break
            allowed = torch.ones(hk, nb, dtype=torch.bool, device=mass.device) if prev is None else prev
            fit = max(1, view.budget // self.block)
            ranked = mass.masked_fill(~allowed, -1.0)
            ranked[:, 0] = float("inf")                                     # the opening block
            pick = ranked.topk(min(fit, nb), dim=-1).indices
            chosen = torch.zeros(hk, nb, dtype=torch.bool, device=mass.device).scatter_(1, pick, True)
            chosen &= allowed | (torch.arange(nb, device=mass.device) == 0)
            self._plan[tier] = ((t,), chosen)
        chosen = self._plan[tier][1]
        of_block = (torch.arange(t, device=mass.device) // self.block).expand(hk, t)
        in_chosen = chosen.gather(1, of_block)
        score = tok / tok.amax(-1, keepdim=True).clamp_min(1e-12) + in_chosen.float() * 2.0
        score = score.masked_fill(view.positions >= qmin, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
