"""Issue 23, after the first held-out set: what its misses showed about the code reader and the novelty cap.

Every snippet here is written for these tests (none is a held-out or calibration bundle):
- attention compared with a bar computed from positions (the average attention 1 / tokens seen) is a threshold;
- a scalar taken out of a remembered state and scaled is not a decay of that state;
- a per-layer schedule whose arithmetic sits in a helper that gets the layer index is a pyramid;
- a method near a credited work only because it builds on it (the work's rule plus an operation of its own) is a
  family member (novelty 2), not a copy (0); uncredited, or adding nothing, or keeping the same tokens, it is not.
"""

from __future__ import annotations

from pathlib import Path

from reviewbench.evidence.computation import computation
from reviewbench.evidence.facts import ComputedFact, EvidenceFacts, SimilarityFact
from reviewbench.evidence.judge import novelty
from reviewbench.evidence.priorart_evidence import computation_matches
from reviewbench.rubric import load_rubric

HEAD = "import torch\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

# how often a token beats the mean attention of the keys each query can see (the bar from positions)
ABOVE_MEAN = HEAD + '''class Tally(EvictionMethod):
    query_window = 40

    def select(self, view: LayerView) -> Keep:
        probs = view.attention()
        visible = (view.positions[0][None, :] <= view.query_positions[:, None]).sum(dim=-1)
        level = 1.0 / visible.clamp(min=1).float()
        hits = (probs > level[None, :, None]).float().sum(dim=1)
        return Keep.from_topk(view.group(hits, "max"), view.budget, view.valid)
'''

# attention masked by positions, then compared with 0: a mask, not a threshold
MASKED = HEAD + '''class Plain(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().sum(dim=1), "mean")
        s = s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        live = torch.isinf(s[0]).logical_and(s[0] > 0)
        return Keep.from_topk(s + live.float(), view.budget, view.valid)
'''

# accumulated attention; a per-head share is read out of the state as a scalar and scaled (no decay)
SCALAR_OUT = HEAD + '''class Shares(EvictionMethod):
    query_window = 1 << 20

    def select(self, view: LayerView) -> Keep:
        acc = view.recall("a")
        if view.queries is not None:
            acc = acc + view.group(view.attention(reduce="sum"), "sum")
        view.remember("a", acc)
        top = acc.amax(dim=-1) / acc.sum(dim=-1).clamp_min(1e-9)
        s = acc.clone()
        for h in range(view.n_kv_heads):
            k = int(view.budget * (0.1 + 0.3 * float(top[h])))
            s[h, view.n_tokens - k:] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
'''
DECAYED = SCALAR_OUT.replace('acc = acc + view.group', 'acc = acc * 0.95 + view.group')

# a linear depth schedule computed in a module-level helper that is handed the layer index
HELPER_SCHEDULE = HEAD + '''def share(i, total, mean, spread):
    hi = mean * (1 + spread)
    lo = mean * (1 - spread)
    return int(hi - i * (hi - lo) / max(1, total - 1))


class Taper(EvictionMethod):
    query_window = 24

    def layer_budgets(self, mean_budget, n_tokens, model):
        return [min(n_tokens, share(j, model.n_layers, mean_budget, 0.6)) for j in range(model.n_layers)]

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().sum(dim=1), "mean")
        return Keep.from_topk(s, view.budget, view.valid)
'''
FLAT_SCHEDULE = HELPER_SCHEDULE.replace("share(j, model.n_layers, mean_budget, 0.6)",
                                        "share(0, model.n_layers, mean_budget, 0.6)")


def _rubric():
    return load_rubric(Path(__file__).resolve().parent.parent / "rubrics" / "default.toml")


def test_attention_against_a_bar_computed_from_positions_is_a_threshold():
    f = computation(ABOVE_MEAN).features
    assert "attention_threshold" in f
    assert computation_matches(f, "")[0].short_name == "Scissorhands"
    assert "attention_threshold" not in computation(MASKED).features


def test_a_scalar_read_out_of_the_state_and_scaled_is_not_a_decay():
    assert "decay" not in computation(SCALAR_OUT).features
    assert "decay" in computation(DECAYED).features


def test_a_schedule_whose_arithmetic_sits_in_a_helper_is_a_pyramid():
    assert "pyramid" in computation(HELPER_SCHEDULE).features
    assert "pyramid" not in computation(FLAT_SCHEDULE).features


def _facts(credited: bool, level: str = "family", beh: float | None = None, extra: tuple[str, ...] = ("entropy",),
           other: SimilarityFact | None = None) -> EvidenceFacts:
    code = [SimilarityFact(reference="baseline:h2o", implements="h2o", via="code", score=0.9, containment=0.2,
                           credited=credited, credit_reason="")]
    if other is not None:
        code.append(other)
    behaviour = [SimilarityFact(reference="baseline:h2o", implements="h2o", via="behaviour", score=beh,
                                credited=credited, credit_reason="")] if beh is not None else []
    return EvidenceFacts(code=code, behaviour=behaviour, behaviour_measured=beh is not None,
                         computed=[ComputedFact(short_name="H2O", title="H2O", arxiv="2306.14048", level=level,
                                                ops=["attention", "accumulate"], extra=list(extra),
                                                credited=credited)])


def test_a_credited_rule_plus_an_operation_of_its_own_is_a_family_member_not_a_copy():
    rubric = _rubric()
    assert novelty(_facts(True), rubric).score == 2
    assert "credited" in novelty(_facts(True), rubric).rationale
    assert novelty(_facts(True, beh=0.8), rubric).score == 2  # close behaviour, credited, measurably changed
    # not credited: the distance decides (the same code)
    assert novelty(_facts(False), rubric).score == 0
    # the credited rule and nothing of its own: the method exists
    assert novelty(_facts(True, level="same", extra=()), rubric).score <= 1
    # the addition changes nothing it keeps: the same method
    assert novelty(_facts(True, beh=0.95), rubric).score == 0


def test_an_uncredited_reference_is_explained_by_a_credited_one_only_when_it_matches_no_more():
    rubric = _rubric()
    held = SimilarityFact(reference="baseline:tova", implements="tova", via="code", score=0.7, containment=0.2,
                          credited=False, credit_reason="")
    assert novelty(_facts(True, other=held), rubric).score == 2
    closer = held.model_copy(update={"score": 0.95})
    assert novelty(_facts(True, other=closer), rubric).score == 0


# --- the reader, on what a port may write by hand (found after set 2 was measured; fresh snippets) -------------

ONE_RANKING = HEAD + '''class Pairs(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention()[:, -1, :], "mean")
        heads, n = a.shape
        flat = a.reshape(-1)
        best = flat.topk(view.budget * heads).indices
        out = []
        for h in range(heads):
            out.append(best[(best // n) == h] - h * n)
        return Keep(tuple(x.sort().values for x in out))
'''

SQUARES = HEAD + '''class Mass(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        size = view.values.float().pow(2).sum(dim=-1).sqrt()
        return Keep.from_topk(size, view.budget, view.valid)
'''

CENTRED = HEAD + '''class Spread(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        c = k - k.mean(dim=1, keepdim=True)
        s = ((c - c.mean(dim=-1, keepdim=True)) ** 2).sum(dim=-1)
        return Keep.from_topk(s, view.budget, view.valid)
'''

BY_GROUP = HEAD + '''class Groups(EvictionMethod):
    query_window = 1 << 20

    def select(self, view: LayerView) -> Keep:
        got = view.attention(reduce="sum")
        g = view.model.group_size
        s = torch.stack([got[i * g:(i + 1) * g].sum(dim=0) for i in range(view.n_kv_heads)])
        return Keep.from_topk(s, view.budget, view.valid)
'''
ALL_HEADS = BY_GROUP.replace("torch.stack([got[i * g:(i + 1) * g].sum(dim=0) for i in range(view.n_kv_heads)])",
                             "got.sum(dim=0).expand(view.n_kv_heads, -1)")

WINDOWS = HEAD + '''class Widen(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().mean(dim=1), "mean")
        p = torch.nn.functional.pad(a, (2, 2), value=0.0)
        wide = p.unfold(-1, 5, 1).amax(dim=-1)
        return Keep.from_topk(wide, view.budget, view.valid)
'''


def test_indices_of_attention_compared_with_a_head_number_are_no_threshold_and_a_flat_ranking_is_one():
    f = computation(ONE_RANKING).features
    assert "attention_threshold" not in f
    assert "head_budget" in f  # flattened in one statement, ranked in the next


def test_a_sum_of_squares_is_a_norm_and_a_centred_one_is_not():
    assert "value_norm" in computation(SQUARES).features
    assert "key_norm" not in computation(CENTRED).features


def test_summing_one_gqa_group_is_not_averaging_the_heads():
    assert "head_average" not in computation(BY_GROUP).features
    assert "head_average" in computation(ALL_HEADS).features


def test_sliding_windows_taken_by_hand_are_pooling():
    f = computation(WINDOWS).features
    assert "pooling" in f and "max_attention" not in f


def test_a_stated_graph_walk_the_code_never_computes_is_misstated():
    from reviewbench.flags.misstated import misstated_flags

    desc = ("# W\n\n## Idea\nTokens matter when important tokens attend to them.\n\n## Method summary\nA random walk "
            "over the attention graph ranks the tokens; the stationary mass decides what stays.\n\n## Evidence\nNone."
            "\n\n## Limitations\nSome.\n")
    src = HEAD + '''class Walk(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(view.group(view.attention()[:, -1, :], "mean"), view.budget, view.valid)
'''
    flags = misstated_flags(desc, src)
    assert [f.flag for f in flags] == ["MISSTATED_METHOD"] and flags[0].strength == "proof"
    assert "graph propagation" in flags[0].explanation
    walked = src.replace('view.group(view.attention()[:, -1, :], "mean")',
                         'view.group((view.attention() @ view.attention().transpose(1, 2)).sum(dim=1), "mean")')
    assert "attention_propagation" in computation(walked).features
    assert misstated_flags(desc, walked) == []


def test_behaviour_on_the_bank_alone_never_clears_a_rule_the_code_computes():
    """A method can tell the bank from the inputs it is scored on: keeping other tokens there (a detector's trick)
    must not turn the code's proof into an indication; the same gap where it is scored does."""
    from reviewbench.evidence.behaviour import BehaviourMatch
    from reviewbench.evidence.priorart_evidence import prior_art
    from reviewbench.flags.prior_art import computation_flags

    src = HEAD + '''class Edges(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        s = torch.zeros(view.n_kv_heads, n)
        s[:, :3] = 2.0
        s[:, n - (view.budget - 3):] = 1.0
        return Keep.from_topk(s, view.budget, view.valid)
'''
    ev = prior_art(src, "", "", "# E\n\n## Method summary\nEdges.\n")
    assert ev.computed and ev.computed[0].short_name == "StreamingLLM"
    bank = BehaviourMatch(reference="baseline:window", jaccard=0.1, rank_corr=0.0)
    flags = computation_flags(ev.computed, [bank], src)
    assert flags and flags[0].strength == "proof" and "bank alone" in flags[0].explanation
    scored = bank.model_copy(update={"source": "benchmark"})
    assert computation_flags(ev.computed, [scored], src)[0].strength == "indication"
