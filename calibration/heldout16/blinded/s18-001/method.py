"""Population-searched layer budgets (board B_online, query-agnostic prefill).

Layers do not need the same share of the cache, and a fixed shape (a pyramid, a ramp) is a guess about every
context at once. We let the run find the shape. Every compression measures, per layer, how much of the closing
window's attention a budget would hold: the sorted window scores of each head, accumulated and normalised, give a
retention curve over the kept fraction. The curves are averaged over the compressions seen so far.

When curves are available for every attention layer, ``layer_budgets`` searches a schedule with a small population:
layers are tied in consecutive groups of 3, a candidate gives each group a kept fraction, the fitness is the summed
retention the curves predict, constrained to the mean budget. Each of 40 generations keeps the best 6 of 24
candidates and refills the population with mutated copies (Gaussian steps of 10 % of the mean fraction, rescaled to
the mean, clipped to [mean / 4, 1]). The search is seeded, so a run is reproducible; before any curve exists the
budget is uniform.

Inside a layer the tokens are ranked by the closing 32 context rows' causal attention, summed over the rows,
averaged over each KV head's query heads and average-pooled over 5 tokens; those rows' own tokens and the 4 opening
tokens are kept. The window score is SnapKV's (Li et al., 2024); the budget search is ours. Unlike PyramidKV's fixed
linear schedule, the schedule here is found from the measured curves.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, ModelInfo

GRID = 41  # kept fractions 0, 1/40, ..., 1


class PopulationBudgets(EvictionMethod):
    name = "population_budgets"
    query_window = 32
    opening = 4
    tie = 3
    population = 24
    elite = 6
    generations = 40
    step = 0.10

    def __init__(self) -> None:
        self.curves: dict[int, torch.Tensor] = {}
        self.seen: dict[int, int] = {}

    # ---- measurement ---------------------------------------------------------------------------------------
    def _record(self, layer: int, scores: torch.Tensor, valid: torch.Tensor) -> None:
        rows = []
        for h in range(scores.shape[0]):
            s = scores[h][valid[h] & torch.isfinite(scores[h])].clamp_min(0).sort(descending=True).values
            if s.numel() == 0 or float(s.sum()) <= 0:
                rows.append(torch.linspace(0, 1, GRID))
                continue
            c = torch.cat([torch.zeros(1), s.cumsum(0).cpu() / float(s.sum())])
            at = (torch.linspace(0, 1, GRID) * s.numel()).round().long()
            rows.append(c[at])
        curve = torch.stack(rows).mean(dim=0)
        n = self.seen.get(layer, 0)
        prev = self.curves.get(layer)
        self.curves[layer] = curve if prev is None else (prev * n + curve) / (n + 1)
        self.seen[layer] = n + 1

    # ---- search --------------------------------------------------------------------------------------------
    def _fitness(self, fr: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        pos = fr.clamp(0, 1) * (GRID - 1)
        lo = pos.floor().long().clamp(max=GRID - 2)
        w = pos - lo
        a = table.gather(1, lo.T).T
        b = table.gather(1, (lo + 1).T).T
        return (a * (1 - w) + b * w).sum(dim=1)

    def _fix(self, fr: torch.Tensor, mean: float, sizes: torch.Tensor) -> torch.Tensor:
        for _ in range(8):
            fr = fr.clamp(mean / 4, 1.0)
            total = (fr * sizes).sum(dim=1, keepdim=True) / sizes.sum()
            fr = fr * (mean / total)
        return fr.clamp(mean / 4, 1.0)

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        layers = list(model.attention_layers)
        if any(layer not in self.curves for layer in layers) or n_tokens <= 0:
            return None
        mean = min(1.0, mean_budget / n_tokens)
        groups = [layers[i:i + self.tie] for i in range(0, len(layers), self.tie)]
        sizes = torch.tensor([float(len(gr)) for gr in groups])[None, :]
        table = torch.stack([torch.stack([self.curves[layer] for layer in gr]).sum(dim=0) for gr in groups])
        gen = torch.Generator().manual_seed(1234)
        pop = self._fix(mean * (1 + self.step * torch.randn(self.population, len(groups), generator=gen)), mean,
                        sizes)
        pop[0] = mean
        for _ in range(self.generations):
            fit = self._fitness(pop, table)
            best = pop[fit.argsort(descending=True)[: self.elite]]
            parents = best[torch.randint(0, self.elite, (self.population - self.elite,), generator=gen)]
            kids = parents + self.step * mean * torch.randn(parents.shape, generator=gen)
            pop = torch.cat([best, self._fix(kids, mean, sizes)])
        top = pop[self._fitness(pop, table).argmax()]
        out = []
        for gi, gr in enumerate(groups):
            out += [int(max(1, min(n_tokens, int(float(top[gi]) * n_tokens))))] * len(gr)
        cap = mean_budget * len(layers)
        i = 0
        while sum(out) > cap:
            j = i % len(out)
            if out[j] > 1:
                out[j] -= 1
            i += 1
        return out

    # ---- ranking -------------------------------------------------------------------------------------------
    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = view.group(view.attention(reduce="sum"), "mean")
        s = F.avg_pool1d(s[:, None], 5, stride=1, padding=2, count_include_pad=False)[:, 0]
        self._record(view.layer, s, view.valid_mask())
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        fixed = (view.positions < self.opening) | (view.positions >= view.query_positions.min())
        return Keep.from_topk(s.masked_fill(fixed, float("inf")), view.budget, view.valid)
