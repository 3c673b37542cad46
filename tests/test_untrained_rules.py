"""Rules of the index that a training-free port computes (issue 23, after held-out sets 29-30; code written fresh):
D2O's token-level rule where no layer budget can be set, LServe's streaming heads picked by a test on the prompt in
place of DuoAttention's trained gates, MoA's per-head window span set from the attention it covers. Each with a
neighbour that is not that rule."""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches
from reviewbench.flags.prior_art import computation_flags

HEAD = "import torch\nimport torch.nn.functional as F\n\nfrom harness.api import EvictionMethod, Keep, LayerView, Rewrite\n\n\n"

# tallies of decode attention; the newest quarter kept, the rest by tally; each dropped entry folded into the survivor
# whose key is most alike when that likeness passes a bar that follows a moving average of the best likenesses
FOLD = HEAD + '''class Tally(EvictionMethod):
    query_window = 32
    momentum = 0.75

    def select(self, view: LayerView) -> Rewrite:
        got = view.group(view.attention().sum(dim=1), "sum")
        tally = got + view.recall("tally", fill=0.0)
        view.remember("tally", tally)
        n = view.keys.shape[1]
        fresh = max(1, view.budget // 4)
        tally[:, n - fresh:] = float("inf")
        order = tally.argsort(dim=-1, descending=True)
        keep, drop = order[:, :view.budget].sort(-1).values, order[:, view.budget:]
        bar = view.state.get("bar", 0.5)
        seen = []
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            k, v = view.keys[h, keep[h]].float(), view.values[h, keep[h]].float()
            gone_k, gone_v = view.keys[h, drop[h]].float(), view.values[h, drop[h]].float()
            sim = F.normalize(gone_k, dim=-1) @ F.normalize(k, dim=-1).T
            best, near = sim.max(dim=-1)
            seen.append(float(best.mean()))
            take = best > bar
            w_new = torch.exp(best[take]).unsqueeze(-1)
            w_old = torch.full((k.shape[0], 1), 2.718)
            k = k * w_old
            v = v * w_old
            k.index_add_(0, near[take], gone_k[take] * w_new)
            v.index_add_(0, near[take], gone_v[take] * w_new)
            norm = w_old.clone().index_add_(0, near[take], w_new)
            ks.append((k / norm).to(view.keys.dtype))
            vs.append((v / norm).to(view.values.dtype))
            ps.append(view.positions[h, keep[h]])
        if seen:
            view.state["bar"] = self.momentum * bar + (1 - self.momentum) * sum(seen) / len(seen)
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
'''

# heads whose newest queries put most of their attention on the first and newest tokens keep those alone; the
# other heads keep pages ranked by the query's bound against each page's channel-wise key extremes
SPLIT_PAGES = HEAD + '''class Pages(EvictionMethod):
    query_window = 16
    page = 8

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().mean(dim=1), "mean")
        n = a.shape[-1]
        edge = torch.zeros(n, dtype=torch.bool)
        edge[:4] = True
        edge[n - 32:] = True
        local = a[:, edge].sum(-1) >= 0.9
        q = view.group(view.queries[:, -1], "mean")
        pages = view.keys[:, : n - n % self.page].unflatten(1, (-1, self.page))
        hi, lo = pages.amax(dim=2), pages.amin(dim=2)
        bound = torch.maximum(q[:, None] * hi, q[:, None] * lo).sum(-1)
        per_token = bound.repeat_interleave(self.page, dim=1)
        per_token = F.pad(per_token, (0, n % self.page), value=float("inf"))
        place = view.positions.float()
        score = torch.where(local[:, None], place, per_token)
        return Keep.from_topk(score, view.budget, view.valid)
'''

CITED_LSERVE = ("# Pages and lanes\n\n## Idea\nWe port LServe (Yang et al., 2025, arXiv 2502.14866) to a decode cap.\n\n"
                "## Method summary\nLServe's streaming heads come from DuoAttention's trained gates; here a head is "
                "streaming when its newest queries put 90 % of their attention on the first and newest tokens. The "
                "other heads keep pages by LServe's key-extreme bound.\n\n## Builds on\nLServe (arXiv 2502.14866).\n")


def _matches(src: str, description: str, board: str) -> list:
    c = computation(src)
    return computation_matches(c.features, description, c.paths, board)


def test_d2o_token_rule_is_named_without_layer_budgets() -> None:
    c = computation(FOLD)
    assert {"accumulate", "merge", "key_similarity", "decay"} <= set(c.features), sorted(c.features)
    same = [m.short_name for m in _matches(FOLD, "# Tally\n\nA fold of what goes.\n", "C") if m.level == "same"]
    assert "D2O" in same, same
    # without the moving bar (a fixed likeness threshold) the fold is a plain merge: no D2O
    fixed = FOLD.replace("            view.state[\"bar\"] = self.momentum * bar + (1 - self.momentum) * sum(seen) / len(seen)",
                         "            view.state[\"bar\"] = bar")
    assert "D2O" not in [m.short_name for m in _matches(fixed, "# Tally\n", "C") if m.level == "same"]


def test_a_credited_lserve_port_with_an_online_head_test_is_credited_whole() -> None:
    ms = _matches(SPLIT_PAGES, CITED_LSERVE, "C")
    lserve = [m for m in ms if m.short_name == "LServe"]
    assert lserve and lserve[0].credited, [(m.short_name, m.level, m.credited) for m in ms]
    assert not [m for m in ms if m.level == "same" and not m.credited], [(m.short_name, m.level) for m in ms]
    assert not computation_flags(ms, [], SPLIT_PAGES)
    # uncredited, it is LServe's rule and a flag
    bare = _matches(SPLIT_PAGES, "# Pages and lanes\n\nOurs.\n", "C")
    assert any(m.short_name == "LServe" and m.level == "same" and not m.credited for m in bare)
    assert [f.flag for f in computation_flags(bare, [], SPLIT_PAGES)] == ["UNDISCLOSED_PRIOR_ART"]


# each head's window grows by steps until it covers 85 % of the closing rows' attention; first 4 tokens kept
SPANS = HEAD + '''class Spans(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(dim=1), "mean")
        n = a.shape[-1]
        share = a.flip(-1).cumsum(-1) / a.sum(-1, keepdim=True)
        need = (share < 0.85).sum(-1) + 1
        span = need.clamp(8, view.budget - 4)
        place = view.positions.float()
        score = torch.where(place >= n - span[:, None], 2.0, 0.0) + (place < 4).float() * 3
        return Keep.from_topk(score, span + 4, view.valid)
'''


def test_moa_untrained_is_a_span_per_head_by_covered_attention_and_nothing_between() -> None:
    c = computation(SPANS)
    assert {"sinks", "recent", "attention_coverage"} <= set(c.features), sorted(c.features)
    cited = "# Spans\n\nWe port MoA (Fu et al., 2024, arXiv 2406.14909) without its offline profile.\n"
    ms = _matches(SPANS, cited, "B_online")
    assert any(m.short_name == "MoA" and m.credited for m in ms), [(m.short_name, m.level) for m in ms]
    # pooled attention ranking the tokens between the first and newest ones is no MoA span
    pooled = SPANS.replace("        score = torch.where(", "        mid = F.max_pool1d(a[:, None], 5, 1, 2)[:, 0]\n"
                                                          "        score = mid + torch.where(")
    assert not [m for m in _matches(pooled, cited, "B_online") if m.short_name == "MoA" and m.level == "same"]
