"""Issue 23, precision: a budget shared out over groups of tokens the method defines itself (position strata, age
bands, clusters), in proportion to the attention each group holds, is an operation of its own (``group_budget``),
not an attention threshold and not a published rule's per-segment or per-head budget.

Why: honest writers of six held-out sets reached this idea independently (strata, log-distance bands, clusters with
square-root quotas); read as "attention against a bar" or as nothing, their window-attention-plus-quotas methods
were a published rule "same" and flagged. Read as an operation of their own, they are that rule's family. The
code below is written fresh for these tests, in styles none of those methods use.
"""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches

HEAD = "import torch\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

# position strata cut with chunk(); each stratum's quota its share of sqrt(mass) times the free budget, rounded
# in a helper that compares the quotas with the strata's sizes
STRATA = HEAD + '''def _round_quotas(weights, total, caps):
    got = [min(c, int(w * total)) for w, c in zip(weights.tolist(), caps)]
    i = 0
    while sum(got) < total and any(g < c for g, c in zip(got, caps)):
        if got[i % len(got)] < caps[i % len(got)]:
            got[i % len(got)] += 1
        i += 1
    return got


class Strata(EvictionMethod):
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        att = view.group(view.attention(reduce="sum"), "max")
        start = view.query_positions.min()
        out = []
        for h in range(view.n_kv_heads):
            ids = view.valid_mask()[h].nonzero().flatten()
            tail = ids[view.positions[h, ids] >= start]
            body = ids[view.positions[h, ids] < start]
            free = max(0, view.budget - tail.numel())
            parts = body.chunk(6)
            mass = torch.stack([att[h, part].sum() for part in parts]).sqrt()
            quotas = _round_quotas(mass / mass.sum(), free, [part.numel() for part in parts])
            picks = [part[att[h, part].topk(q).indices] for part, q in zip(parts, quotas) if q > 0]
            out.append(torch.cat(picks + [tail]).sort().values)
        return Keep(tuple(out))
'''

# the same idea on decode: age bands by a logarithm, quotas from bincount-weighted mass; the weights replaced by
# ones in a branch taken only when every band's mass is zero
BANDS = HEAD + '''class AgeBands(EvictionMethod):
    query_window = 16

    def on_decode(self, view: LayerView) -> Keep:
        att = view.group(view.attention(reduce="sum"), "mean")
        out = []
        for h in range(view.n_kv_heads):
            ids = view.valid_mask()[h].nonzero().flatten()
            age = (view.positions[h, ids].max() - view.positions[h, ids]).float() + 1
            band = age.log2().floor().long()
            weight = torch.bincount(band, weights=att[h, ids]).sqrt()
            if float(weight.sum()) == 0.0:
                weight = torch.ones_like(weight)
            share = (weight / weight.sum() * view.budget).floor().long()
            kept = []
            for b in range(share.numel()):
                members = ids[band == b]
                n = min(int(share[b]), members.numel())
                if n > 0:
                    kept.append(members[att[h, members].topk(n).indices])
            out.append(torch.cat(kept).sort().values if kept else ids[-view.budget:])
        return Keep(tuple(out))

    def select(self, view: LayerView) -> Keep:
        return self.on_decode(view)
'''

# one fixed quota per segment (budget // segments): each segment keeps its own best tokens, whatever their mass
EVEN = HEAD + '''class Even(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        att = view.group(view.attention(reduce="sum"), "mean")
        n = att.shape[-1]
        per = view.budget // 4
        out = []
        for h in range(view.n_kv_heads):
            kept = [lo + att[h, lo:lo + n // 4].topk(min(per, n // 4)).indices for lo in range(0, n - n // 4 + 1, n // 4)]
            out.append(torch.cat(kept))
        return Keep(tuple(out))
'''

# whole chunks by their summed attention, the budget they leave filled from the next chunk: what is left is a
# remainder, not a share of attention
LEFTOVER = HEAD + '''class Leftover(EvictionMethod):
    query_window = 16
    width = 8

    def select(self, view: LayerView) -> Keep:
        att = view.group(view.attention(reduce="sum"), "mean")
        n = att.shape[-1] // self.width * self.width
        out = []
        for h in range(view.n_kv_heads):
            sums = att[h, :n].view(-1, self.width).sum(-1)
            order = sums.argsort(descending=True)
            whole = view.budget // self.width
            keep = torch.zeros(att.shape[-1], dtype=torch.bool)
            for c in order[:whole].tolist():
                keep[c * self.width:(c + 1) * self.width] = True
            left = view.budget - int(keep.sum())
            if left > 0 and whole < order.numel():
                c = int(order[whole])
                lo, hi = c * self.width, (c + 1) * self.width
                keep[lo + att[h, lo:hi].topk(min(left, hi - lo)).indices] = True
            out.append(keep.nonzero().flatten())
        return Keep(tuple(out))
'''

# per-head budgets in proportion to each head's mass: the groups are heads, not tokens
HEADS = HEAD + '''class HeadShares(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        att = view.group(view.attention(reduce="sum"), "mean")
        mass = att.sum(-1)
        k = (mass / mass.sum() * view.budget * view.n_kv_heads).long().clamp(1, att.shape[-1])
        return Keep(tuple(att[h].topk(int(k[h])).indices for h in range(view.n_kv_heads)))
'''

# a layer that sends most of its attention to a budget-sized edge keeps the edge: attention against a bar
EDGE = HEAD + '''class Edge(EvictionMethod):
    query_window = 8
    bar = 0.85

    def select(self, view: LayerView) -> Keep:
        att = view.attention()[:, -1, :]
        near = torch.zeros(att.shape[-1], dtype=torch.bool)
        near[max(0, att.shape[-1] - view.budget):] = True
        if float(att[:, near].sum(-1).mean()) >= self.bar:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        return Keep.from_topk(view.group(view.attention().sum(dim=1), "mean"), view.budget, view.valid)
'''


def test_quotas_shared_by_attention_over_own_groups_are_a_group_budget():
    for src in (STRATA, BANDS):
        feats = computation(src).features
        assert "group_budget" in feats, sorted(feats)
        assert "attention_threshold" not in feats, sorted(feats)  # a quota against a group's size is no bar


def test_fixed_quotas_remainders_and_head_shares_are_no_group_budget():
    for src in (EVEN, LEFTOVER, HEADS):
        assert "group_budget" not in computation(src).features


def test_attention_against_a_bar_over_a_budget_sized_edge_stays_a_threshold():
    assert "attention_threshold" in computation(EDGE).features


def test_window_attention_with_group_quotas_is_the_window_rules_family_not_the_rule():
    desc = ("# Strata\n\n## Idea\nSpread the budget over position strata.\n\n## Method summary\nThe closing rows' "
            "attention (SnapKV, arXiv 2404.14469) ranks tokens within each stratum; each stratum's quota is its share "
            "of the square root of its attention mass.\n")
    for src, board in ((STRATA, "B_online"), (BANDS, "C")):
        c = computation(src)
        out = computation_matches(c.features, desc, c.paths, board=board)
        same = [m.short_name for m in out if m.level == "same" and not m.credited]
        assert not same, (board, same, sorted(c.features))
