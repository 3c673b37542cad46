"""Rules in operations for the eviction and budget-allocation entries of the index beyond the first 25, the
operations they needed in the code reader, and gates: a fitted per-head table that decides which heads keep
everything is the rule of the paper it comes from, whatever scoring the heads it lets through use.

Every method here is written for these tests, from the papers' rules (none is a held-out or calibration bundle).
"""

from __future__ import annotations

import pytest

from reviewbench.evidence.computation import FEATURE_WORDS, computation
from reviewbench.evidence.priorart_evidence import computation_matches, prior_art
from reviewbench.flags.prior_art import computation_flags
from reviewbench.priorart import load_index

HEAD = "import torch\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

# keys projected on the principal direction of the queries (SVD)
AXIS = HEAD + '''class Axis(EvictionMethod):
    query_window = 48

    def select(self, view: LayerView) -> Keep:
        q = view.group(view.queries.float(), "mean")
        _, _, basis = torch.linalg.svd(q, full_matrices=False)
        lead = basis[:, 0, :]
        score = -(view.keys.float() * lead[:, None, :]).sum(dim=-1)
        score[:, :4] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
'''

# the same with the directions shipped as a fitted table
TABLE_AXIS = HEAD + '''DIRS = [[0.31, -0.12, 0.05, 0.44], [0.02, 0.27, -0.33, 0.11]]


class Bearing(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        d = torch.tensor(DIRS)[: view.n_kv_heads]
        s = torch.einsum("hnd,hd->hn", view.keys[..., :4].float(), d)
        return Keep.from_topk(-s, view.budget, view.valid)
'''

# per-partition relative spread (lag-relative)
LAGGED = HEAD + '''class Relay(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        k, v = view.keys.float(), view.values.float()
        n, w = view.n_tokens, 64
        score = torch.full((view.n_kv_heads, n), float("inf"))
        for a in range(4, n - 2 * w, w):
            parts = []
            for x in (k, v):
                ref = x[:, a + w:a + 2 * w]
                lo, hi = ref.amin(dim=1, keepdim=True), ref.amax(dim=1, keepdim=True)
                rel = (x[:, a:a + w] - lo) / (hi - lo + 1e-6)
                parts.append(rel.std(dim=-1))
            score[:, a:a + w] = parts[0] + parts[1]
        return Keep.from_topk(score, view.budget, view.valid)
'''

# the attention output's change if a token went
OUTPUT_ERR = HEAD + '''class Ripple(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention()[:, -1], "mean")
        v = view.values.float()
        o = torch.einsum("hn,hnd->hd", a, v)
        err = a / (1 - a).clamp_min(1e-6) * (v - o[:, None]).norm(dim=-1)
        return Keep.from_topk(err, view.budget, view.valid)
'''

# squared key norm times squared value norm
KV_MASS = HEAD + '''class Heft(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        a = view.keys.float().pow(2).sum(-1)
        b = view.values.float().pow(2).sum(-1)
        s = a * b
        s[:, :4] = s.max() + 1
        return Keep.from_topk(s, view.budget, view.valid)
'''

# leverage of the sketched keys blended with attention
SKETCH = HEAD + '''class Outlier(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        x = view.keys.float() - view.keys.float().mean(dim=1, keepdim=True)
        g = torch.randn(x.shape[-1], 16) / 4.0
        y = x @ g
        gram = y.transpose(1, 2) @ y + 1e-3 * torch.eye(16)
        chol = torch.linalg.cholesky(gram)
        lev = (y * torch.cholesky_solve(y.transpose(1, 2), chol).transpose(1, 2)).sum(-1)
        att = view.group(view.attention().sum(dim=1), "mean")
        return Keep.from_topk(lev / lev.sum(-1, keepdim=True) + att, view.budget, view.valid)
'''

# hash bits of keys and the last query
HASHED = HEAD + '''class Bits(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        planes = torch.randn(view.keys.shape[-1], 32)
        kb = (view.keys.float() @ planes) > 0
        qb = (view.group(view.queries.float(), "mean")[:, -1:] @ planes) > 0
        same = (kb == qb).float().sum(-1)
        return Keep.from_topk(same, view.budget, view.valid)
'''

# a frozen per-head gate table: streaming heads keep sinks + recent, the others rank by window attention
GATED = HEAD + '''class Split(EvictionMethod):
    query_window = 32
    PROFILE = [[0.91, 0.08, 0.12, 0.77], [0.15, 0.83, 0.64, 0.05]]

    def select(self, view: LayerView) -> Keep:
        att = view.group(view.attention().sum(dim=1), "mean")
        n = view.n_tokens
        out = torch.zeros_like(att)
        for h in range(view.n_kv_heads):
            if self.PROFILE[view.layer % 2][h % 4] > 0.5:
                out[h] = att[h]
            else:
                out[h, :4] = 2.0
                out[h, n - (view.budget - 4):] = 1.0
        return Keep.from_topk(out, view.budget, view.valid)
'''
# the same gate, but the heads it lets through rank by key norm: an operation of its own
GATED_OWN = GATED.replace("out[h] = att[h]", "out[h] = -view.keys[h].float().norm(dim=-1)").replace(
    'att = view.group(view.attention().sum(dim=1), "mean")', "att = view.keys[..., 0].float()")
# the table weighs attention per head (no test on it): not a gate
WEIGHED = GATED.replace(
    "if self.PROFILE[view.layer % 2][h % 4] > 0.5:\n                out[h] = att[h]\n            else:\n"
    "                out[h, :4] = 2.0\n                out[h, n - (view.budget - 4):] = 1.0",
    "out[h] = att[h] * self.PROFILE[view.layer % 2][h % 4]\n            out[h, :4] = 2.0")


COVER = HEAD + '''class Cover(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().mean(dim=1), "mean")
        srt = torch.sort(a, dim=-1, descending=True).values
        need = (srt.cumsum(dim=-1) < 0.9).sum(dim=-1) + 1
        k = int(need.clamp(max=view.budget).float().mean())
        return Keep.from_topk(a, k, view.valid)
'''

# a layer whose last queries look only at the first and last tokens keeps only those
LAZY = HEAD + '''class Idle(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        a = view.attention().mean(dim=(0, 1))
        n = view.n_tokens
        edge = a[:4].sum() + a[n - 64:].sum()
        s = view.group(view.attention().sum(dim=1), "mean")
        if edge > 0.85:
            s = torch.zeros_like(s)
            s[:, :4] = 2.0
            s[:, n - (view.budget - 4):] = 1.0
        return Keep.from_topk(s, view.budget, view.valid)
'''

# the question's tokens score the context
ASKED = HEAD + '''class Asked(EvictionMethod):
    question_queries = True

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention(reduce="sum"), "mean")
        return Keep.from_topk(s, view.budget, view.valid)
'''

# per-head budgets read from a profile table, attention inside each head
PROFILED = HEAD + '''SHARE = [0.40, 0.25, 0.20, 0.15]


class Portion(EvictionMethod):
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().sum(dim=1), "mean")
        total = view.budget * view.n_kv_heads
        ks = torch.tensor([int(total * SHARE[h % 4]) for h in range(view.n_kv_heads)])
        return Keep.from_topk(s, ks, view.valid)
'''

# per-layer budgets from a searched table
SEARCHED = HEAD + '''class Tiers(EvictionMethod):
    query_window = 24
    FRACTIONS = (1.35, 1.20, 0.95, 0.80, 0.70, 1.00)

    def layer_budgets(self, mean_budget, n_tokens, model):
        f = [self.FRACTIONS[i % 6] for i in range(model.n_layers)]
        return [min(n_tokens, int(mean_budget * x)) for x in f]

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().sum(dim=1), "mean")
        return Keep.from_topk(s, view.budget, view.valid)
'''

# queries moved to positions after the prompt score the keys
AHEAD = HEAD + '''class Ahead(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        q = view.rotate(view.queries.float(), -view.query_positions)
        later = view.query_positions + 32
        q = view.rotate(q, later)
        s = view.group(view.attention(q).sum(dim=1), "mean")
        return Keep.from_topk(s, view.budget, view.valid)
'''


def _desc(builds: str = "None.", relation: str = "None.") -> str:
    return (f"# M\n\n## Idea\nAn idea.\n\n## Method summary\nA summary.\n\n## Relation to prior work\n{relation}\n\n"
            f"## Evidence\nNone.\n\n## Limitations\nSome.\n\n## Builds on\n{builds}\n")


def _first_same(src: str) -> str | None:
    same = [m for m in computation_matches(computation(src).features, "") if m.level == "same"]
    return same[0].short_name if same else None


RULED = ("Q-Filters", "LagKV", "CORM", "FINCH", "CAOTE", "CurDKV", "Compactor", "CapKV", "HashEvict", "DefensiveKV",
         "DapQ", "SimLayerKV", "RazorAttention", "RLKV", "PruLong", "BaKlaVa", "LU-KV", "EvolKV", "ZigZagKV",
         "DBudgetKV", "D2O", "MorphKV")


def test_the_entries_given_rules_carry_them_in_operations_the_reader_extracts():
    papers = {p.short_name: p for p in load_index().papers}
    for name in RULED:
        p = papers[name]
        assert p.ops and p.rule and p.arxiv, name
        assert all(a in FEATURE_WORDS for op in p.ops + p.ops_optional for a in op.split("|")), name


@pytest.mark.parametrize("src,paper", [
    (AXIS, "Q-Filters"), (TABLE_AXIS, "Q-Filters"), (LAGGED, "LagKV"), (OUTPUT_ERR, "CAOTE"), (KV_MASS, "CurDKV"),
    (SKETCH, "Compactor"), (HASHED, "HashEvict"), (GATED, "DuoAttention"), (COVER, "DBudgetKV"), (LAZY, "SimLayerKV"),
    (ASKED, "FINCH"), (SEARCHED, "EvolKV"), (AHEAD, "DapQ"), (PROFILED, "HeadKV"),
])
def test_a_port_written_from_the_paper_is_named_by_its_rule(src, paper):
    assert _first_same(src) == paper


def test_renaming_everything_changes_nothing():
    renamed = (TABLE_AXIS.replace("DIRS", "PALETTE").replace("Bearing", "Compass").replace(" d ", " colour ")
               .replace("d)", "colour)").replace(" s ", " weight ").replace("(-s,", "(-weight,"))
    assert _first_same(renamed) == "Q-Filters"
    assert _first_same(LAGGED.replace("ref", "nxt").replace("rel", "z").replace("lo,", "floor_,")
                       .replace("- lo", "- floor_").replace("hi - lo", "hi - floor_")) == "LagKV"


# --- the reader's new operations, in their general forms -------------------------------------------------

def test_keys_against_fitted_vectors_or_the_queries_principal_direction_is_a_projection():
    assert "key_projection" in computation(TABLE_AXIS).features
    assert "query_svd" in computation(AXIS).features
    # a trained layer kept on the module and applied to the keys is one too
    layer = HEAD + """class Lens(EvictionMethod):
    def setup(self, model):
        self.probe = torch.nn.Linear(model.head_dim, 1)

    def select(self, view: LayerView) -> Keep:
        s = self.probe(view.keys.float()).squeeze(-1)
        return Keep.from_topk(s, view.budget, view.valid)
"""
    assert "key_projection" in computation(layer).features
    # keys against the mean key are no projection on fitted numbers
    assert "key_projection" not in computation(KV_MASS).features


def test_a_decomposition_of_keys_or_values_is_leverage_and_of_queries_a_principal_direction():
    f = computation(SKETCH).features
    assert "leverage" in f and "query_svd" not in f
    assert "leverage" not in computation(AXIS).features


def test_min_max_normalised_channels_and_their_spread_but_not_a_spread_of_norms():
    f = computation(LAGGED).features
    assert {"minmax_norm", "key_variance"} <= set(f)
    spread = HEAD + """class Spread(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        nrm = view.keys.float().norm(dim=-1)
        quota = nrm.std(dim=-1, keepdim=True)
        a = view.group(view.attention(reduce="sum"), "mean") if view.queries is not None else nrm
        lo, hi = a.amin(dim=-1, keepdim=True), a.amax(dim=-1, keepdim=True)
        return Keep.from_topk((a - lo) / (hi - lo) + quota, view.budget, view.valid)
"""
    g = computation(spread).features
    assert "key_variance" not in g and "minmax_norm" not in g


def test_sorted_attention_summed_up_is_coverage_and_unsorted_a_running_sum():
    assert "attention_coverage" in computation(COVER).features and "accumulate" not in computation(COVER).features
    running = COVER.replace("torch.sort(a, dim=-1, descending=True).values", "a")
    assert "accumulate" in computation(running).features and "attention_coverage" not in computation(running).features


def test_queries_moved_forward_are_future_positions_and_moved_back_are_not():
    assert "future_rope" in computation(AHEAD).features
    back = AHEAD.replace("view.query_positions + 32", "view.query_positions - 32")
    assert "future_rope" not in computation(back).features


def test_the_sign_of_a_random_projection_is_a_hash_and_random_scores_are_not():
    assert "hashing" in computation(HASHED).features
    plain = HEAD + """class Dice(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(torch.rand(view.n_kv_heads, view.n_tokens), view.budget, view.valid)
"""
    assert "hashing" not in computation(plain).features
    assert _first_same(plain) == "Random"


def test_attention_weights_times_values_is_the_attention_output():
    assert "attention_output" in computation(OUTPUT_ERR).features
    assert "attention_output" not in computation(ASKED).features


# --- gates ---------------------------------------------------------------------------------------------

def test_a_fitted_per_head_table_tested_per_head_is_a_gate_and_weighing_by_it_is_not():
    assert "learned_gate" in computation(GATED).features
    f = computation(WEIGHED).features
    assert "learned_gate" not in f and "learned_weights" in f
    assert not any(m.short_name == "DuoAttention" for m in computation_matches(f, ""))
    # a 0/1 profile of the heads, ranked or tested, gates as well; a per-token score tested is no gate
    flags = GATED.replace("PROFILE = [[0.91, 0.08, 0.12, 0.77], [0.15, 0.83, 0.64, 0.05]]",
                          "PROFILE = [[1, 0, 0, 1], [0, 1, 1, 0]]").replace(" > 0.5:", ":")
    assert "learned_gate" in computation(flags).features
    assert "learned_gate" not in computation(COVER).features


def test_a_gated_port_is_the_gates_paper_whatever_scores_the_heads_it_lets_through():
    ms = computation_matches(computation(GATED).features, "")
    assert ms[0].short_name == "DuoAttention" and ms[0].level == "same" and "learned_gate" in ms[0].matched
    flags = computation_flags(ms, [], GATED)
    assert [f.flag for f in flags] == ["UNDISCLOSED_PRIOR_ART"] and flags[0].strength == "proof"
    assert "DuoAttention" in flags[0].explanation
    credited = prior_art(GATED, "", "", _desc(builds="DuoAttention (arXiv 2410.10819): its retrieval/streaming "
                                                     "head split."))
    assert computation_flags(credited.computed, [], GATED) == []


def test_a_gate_plus_an_operation_of_its_own_stays_a_family_member():
    ms = computation_matches(computation(GATED_OWN).features, "")
    duo = next(m for m in ms if m.short_name == "DuoAttention")
    assert duo.level == "family" and "key_norm" in duo.extra
    assert computation_flags(ms, [], GATED_OWN) == []
    # without a gate (the table only weighs), attention beside the rule still makes a family member, as before
    weighed = WEIGHED.replace("out[h, :4] = 2.0", "out[h, :4] = 2.0\n            out[h, n - 8:] = 1.0")
    ms = computation_matches(computation(weighed).features, "")
    duo = next(m for m in ms if m.short_name == "DuoAttention")
    assert "learned_gate" not in duo.matched and duo.level == "family" and "attention" in duo.extra


def test_a_stated_gate_or_channel_variance_the_code_computes_is_not_misstated():
    from reviewbench.flags.misstated import misstated_flags

    binary = GATED.replace("PROFILE = [[0.91, 0.08, 0.12, 0.77], [0.15, 0.83, 0.64, 0.05]]",
                           "PROFILE = [[1, 0, 0, 1], [0, 1, 1, 0]]").replace(" > 0.5:", ":")
    said = ("# M\n\n## Idea\nA learned gate per head picks the heads that keep everything.\n\n## Method summary\n"
            "Heads the learned gate table marks keep their attention ranking.\n\n## Builds on\nNone.\n")
    assert not [f for f in misstated_flags(said, binary, []) if "learned" in f.quote]
    spread = said.replace("A learned gate per head picks the heads that keep everything.",
                          "Tokens are ranked by the variance of their normalised key channels.")
    assert not [f for f in misstated_flags(spread, LAGGED, []) if "variance" in f.quote]
    # and the same words over code that computes neither still are
    assert [f for f in misstated_flags(spread, KV_MASS, []) if "variance" in f.quote]
