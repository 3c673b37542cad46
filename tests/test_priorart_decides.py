"""Issue 23: prior art decides, MISSTATED_METHOD offline, words that match the numbers, credit that states use.

Every snippet and sentence here is written for these tests (none is a held-out case or a sentence of the issue).
"""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.facts import BoardFact, BudgetGain, ComputedFact, EvidenceFacts, LedgerFact
from reviewbench.evidence.judge import effectiveness, novelty, soundness
from reviewbench.evidence.priorart_evidence import computation_matches, credit, prior_art
from reviewbench.flags.misstated import misstated_flags
from reviewbench.flags.prior_art import computation_flags
from reviewbench.overall import BoardMeasurement
from reviewbench.priorart import load_index
from reviewbench.rubric import load_rubric
from reviewbench.verdict import decide

HEAD = "import torch\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

# A2SF written from its paper: decayed accumulated attention (names chosen to say nothing)
DECAYED = HEAD + '''class Zeta(EvictionMethod):
    query_window = 1 << 20

    def select(self, view: LayerView) -> Keep:
        m = view.recall("m")
        if view.queries is not None:
            m = m * 0.9 + view.group(view.attention(reduce="sum"), "sum")
        view.remember("m", m)
        return Keep.from_topk(m, view.budget, view.valid)
'''
# a sinks + sliding window, nothing else
WINDOW = HEAD + '''class Omega(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        s = torch.zeros(view.n_kv_heads, n)
        s[:, :2] = 2.0
        s[:, n - (view.budget - 2):] = 1.0
        return Keep.from_topk(s, view.budget, view.valid)
'''


def _rubric():
    from pathlib import Path

    return load_rubric(Path(__file__).resolve().parent.parent / "rubrics" / "default.toml")


def _desc(idea: str = "An idea.", summary: str = "A summary.", relation: str = "None.", builds: str = "None.") -> str:
    return (f"# M\n\n## Idea\n{idea}\n\n## Method summary\n{summary}\n\n## Relation to prior work\n{relation}\n\n"
            f"## Evidence\nNone.\n\n## Limitations\nSome.\n\n## Builds on\n{builds}\n")


def _paper(short: str):
    return next(p for p in load_index().papers if p.short_name == short)


# --- the index states rules in operations ------------------------------------------------------------------

def test_the_eviction_literature_beyond_the_baselines_has_rules_in_operations():
    papers = {p.short_name: p for p in load_index().papers}
    for name in ("Keyformer", "Scissorhands", "FastGen", "CAKE", "PyramidInfer", "NACL", "KeyDiff", "K-norm",
                 "DuoAttention", "HeadKV", "A2SF", "VATP"):
        p = papers[name]
        assert p.ops and p.rule and p.arxiv, name
    from reviewbench.evidence.computation import FEATURE_WORDS
    for p in papers.values():  # every operation named is one the code reader extracts
        assert all(a in FEATURE_WORDS for op in p.ops + p.ops_optional for a in op.split("|")), p.short_name


def test_retrieval_by_computation_names_the_paper_whatever_the_names():
    ms = computation_matches(computation(DECAYED).features, "")
    assert ms[0].short_name == "A2SF" and ms[0].level == "same" and set(ms[0].matched) >= {"accumulate", "decay"}
    renamed = DECAYED.replace("Zeta", "Salience").replace('"m"', '"memory_bank"').replace(" m ", " bank ").replace(
        "(m,", "(bank,").replace(", m)", ", bank)")  # every use renamed: a value never returned is no part of the rule
    assert computation_matches(computation(renamed).features, "")[0].short_name == "A2SF"
    ev = prior_art(DECAYED, "", "", "")
    assert ev.hits[0].short_name == "A2SF" and ev.hits[0].via == "computation"


def test_a_rule_plus_an_operation_of_its_own_is_family_not_same():
    src = DECAYED.replace('m * 0.9 +', 'm * 0.9 + view.values.float().norm(dim=-1) *')
    ms = computation_matches(computation(src).features, "")
    assert ms and all(m.level == "family" for m in ms)


def test_an_uncredited_published_rule_raises_undisclosed_prior_art_with_its_operations_as_proof():
    ev = prior_art(DECAYED, "", "", _desc(relation="Decay is our idea."))
    flags = computation_flags(ev.computed, [], DECAYED)
    assert [f.flag for f in flags] == ["UNDISCLOSED_PRIOR_ART"] and flags[0].strength == "proof"
    assert "A2SF" in flags[0].explanation and "2407.20485" in flags[0].explanation
    assert flags[0].location.startswith("method.py:") and flags[0].quote in DECAYED
    # it stands in the offline verdict (proof_alone)
    v = decide([], _rubric(), "other", flags)
    assert [f.flag for f in v.standing_flags] == ["UNDISCLOSED_PRIOR_ART"]
    # credited: no flag
    credited = prior_art(DECAYED, "", "", _desc(builds="A2SF (arXiv 2407.20485): the decayed accumulation."))
    assert computation_flags(credited.computed, [], DECAYED) == []


def test_a_credited_port_still_gets_novelty_at_most_one_and_a_family_member_at_most_two():
    rubric = _rubric()
    port = EvidenceFacts(computed=[ComputedFact(short_name="A2SF", title="t", arxiv="2407.20485", level="same",
                                                ops=["attention", "accumulate", "decay"], credited=True)])
    n = novelty(port, rubric)
    assert n.score <= 1 and "A2SF" in n.rationale and "credited" in n.rationale
    fam = EvidenceFacts(computed=[ComputedFact(short_name="A2SF", title="t", arxiv="2407.20485", level="family",
                                               ops=["attention", "accumulate", "decay"], extra=["value_norm"],
                                               credited=True)])
    assert novelty(fam, rubric).score == 2
    assert novelty(EvidenceFacts(), rubric).score == 3


# --- MISSTATED_METHOD ------------------------------------------------------------------------------------

def test_a_stated_mechanism_the_code_never_computes_is_misstated_with_both_quotes():
    d = _desc(summary="A small neural gate network, trained offline on the dev split, scores every key.")
    flags = misstated_flags(d, WINDOW)
    assert [f.flag for f in flags] == ["MISSTATED_METHOD"] and flags[0].strength == "proof"
    assert "neural gate" in flags[0].quote and flags[0].location.startswith("DESCRIPTION.md:")
    assert "learned weights" in flags[0].explanation and "method.py:" in flags[0].explanation
    assert [f.flag for f in decide([], _rubric(), "other", flags).standing_flags] == ["MISSTATED_METHOD"]


def test_a_mechanism_the_code_computes_or_that_is_negated_or_another_works_is_not_misstated():
    entropy_code = HEAD + '''class E(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        p = view.group(view.attention().mean(dim=1), "mean")
        h = -(p * torch.log(p + 1e-9)).sum(dim=-1, keepdim=True)
        return Keep.from_topk(p * h, view.budget, view.valid)
'''
    assert misstated_flags(_desc(summary="Each head's entropy scales its scores."), entropy_code) == []
    assert misstated_flags(_desc(summary="No trained scorer and no entropy: only positions."), WINDOW) == []
    assert misstated_flags(_desc(idea="CAKE's entropy budgets are costly, so positions decide here."), WINDOW) == []


def test_a_misstatement_only_the_data_flow_misses_is_an_indication():
    # a logarithm of the data could be part of an entropy the data flow does not see: a judge decides
    calls_log = WINDOW.replace("s[:, :2] = 2.0", "s[:, :2] = torch.log(view.keys.float().norm(dim=-1)[:, :2])")
    flags = misstated_flags(_desc(summary="Tokens are ranked by the entropy of their attention."), calls_log)
    assert flags and flags[0].strength == "indication"
    assert decide([], _rubric(), "other", flags).standing_flags == []
    # a logarithm of a constant is a number fixed before any input is seen: no entropy of anything, a proof
    const_log = WINDOW.replace("s[:, :2] = 2.0", "s[:, :2] = torch.log(torch.tensor(9.0))")
    flags = misstated_flags(_desc(summary="Tokens are ranked by the entropy of their attention."), const_log)
    assert flags and flags[0].strength == "proof"


def test_misstated_facts_put_soundness_at_zero():
    s = soundness(EvidenceFacts(misstated=["learned weights"]))
    assert s.score == 0 and "learned weights" in s.rationale


# --- effectiveness and soundness words ------------------------------------------------------------------

def _board(n_items: int, gains: list[tuple[float, float, float]]) -> BoardFact:
    m = BoardMeasurement.model_construct(method="x", overall=0.41, n_items=n_items, per_budget=[], errors=[])
    return BoardFact(measurement=m, best_id="baseline:kvzip", best_overall=0.54, random_overall=0.1,
                     weakest_overall=0.3, gains=[BudgetGain(budget=b, gain=g, lower=lo, upper=hi)
                                                 for b, (g, lo, hi) in zip((0.1, 0.25, 0.5), gains)], margin=0.005)


def test_on_par_needs_a_narrow_ci_over_enough_items():
    wide = effectiveness(EvidenceFacts(board=_board(3, [(-0.13, -0.4, 0.02), (-0.2, -0.3, -0.1)])))
    assert wide.score == 2 and "too few items to tell" in wide.rationale and "3 item" in wide.rationale
    wide_many = effectiveness(EvidenceFacts(board=_board(40, [(-0.05, -0.2, 0.1)])))
    assert wide_many.score == 2 and "wider than" in wide_many.rationale
    tight = effectiveness(EvidenceFacts(board=_board(40, [(-0.004, -0.02, 0.012)])))
    assert tight.score == 3 and "on par" in tight.rationale


def test_the_soundness_rationale_names_what_was_not_there():
    s = soundness(EvidenceFacts())
    assert s.score == 2 and "no claim to re-run" in s.rationale and "no citation" in s.rationale
    assert "could not be checked" not in s.rationale
    s = soundness(EvidenceFacts(ledger=LedgerFact(unverifiable=2), claims=2, citations_found=1))
    assert "2 claim(s) outside what the arena can re-run" in s.rationale and "no citation" not in s.rationale


# --- credit states use ----------------------------------------------------------------------------------

def test_credit_is_a_statement_of_use_not_a_contrast_a_mention_or_an_exists_sentence():
    not_credit = [
        ("FastGen", _desc(relation="FastGen picks one structural policy per head at prefill; ours re-decides "
                                   "at every step.")),
        ("HeadKV", _desc(builds="Head-importance tables exist as well: HeadKV.")),
        ("Keyformer", _desc(builds="Keyformer perturbs logits with Gumbel noise, whereas we rank by key norm.")),
        ("CAKE", _desc(relation="Among other eviction schemes, CAKE allocates layer budgets.")),
        ("PyramidInfer", _desc(relation="PyramidInfer also shrinks deeper layers.")),
        ("KeyDiff", _desc(builds="KeyDiff, which we differ from.")),
    ]
    for name, d in not_credit:
        assert not credit(d, _paper(name)).credited, name
    credit_ = [
        ("Keyformer", _desc(relation="We adapted Keyformer's noisy scoring to the prefill phase.")),
        ("Scissorhands", _desc(builds="Scissorhands' persistence counting with a shorter history.")),
        ("NACL", _desc(relation="This selector is derived from NACL (Chen et al., 2024).")),
        ("KeyDiff", _desc(builds="- KeyDiff (arXiv 2504.15364): the mean-key anchor")),
        ("PyramidInfer", _desc(relation="Budgets fall with depth as in PyramidInfer.")),
    ]
    for name, d in credit_:
        assert credit(d, _paper(name)).credited, name


def test_a_coined_name_is_a_name_without_a_citation_marker():
    assert credit(_desc(relation="We build on Keyformer for the noise."), _paper("Keyformer")).credited
    assert not credit(_desc(summary="Tokens with high expected attention are kept."),
                      _paper("Expected Attention")).credited


def test_behaviour_far_from_the_matched_baseline_weakens_the_computation_proof():
    from reviewbench.evidence.behaviour import BehaviourMatch

    ev = prior_art(WINDOW, "", "", _desc())
    assert ev.computed[0].short_name == "StreamingLLM"
    far = BehaviourMatch(reference="baseline:window", jaccard=0.2, rank_corr=0.1, source="benchmark")
    flags = computation_flags(ev.computed, [far], WINDOW)
    assert flags and flags[0].strength == "indication" and "Jaccard 0.20" in flags[0].explanation
    near = BehaviourMatch(reference="baseline:window", jaccard=0.97, rank_corr=0.9, source="benchmark")
    assert computation_flags(ev.computed, [near], WINDOW)[0].strength == "proof"


def test_a_credited_method_is_not_flagged_for_a_reference_whose_code_holds_the_credited_one():
    """PyramidKV's code holds SnapKV's: a credited SnapKV-based method matches PyramidKV less than SnapKV."""
    from reviewbench.evidence.similarity import baseline_sources, compare, public_references
    from reviewbench.flags.prior_art import prior_art_flags

    src = baseline_sources()["baseline:snapkv"].replace("class SnapKV(", "class Sharpened(").replace(
        "kernel = 7", "kernel = 9")
    code = compare(src, {**baseline_sources(), **public_references()})
    assert any(c.reference == "baseline:pyramidkv" and c.score >= 0.6 for c in code)
    d = _desc(relation="We build on SnapKV (Li et al., 2024, arXiv 2404.14469) with a wider kernel.")
    assert prior_art_flags([], code, {}, d, src, ("class Sharpened", 1)) == []
    # not credited: the copy is flagged
    flags = prior_art_flags([], code, {}, _desc(), src, ("class Sharpened", 1))
    assert "MISSING_ATTRIBUTION" in {f.flag for f in flags}


def test_behaviour_makes_a_misstatement_a_proof_only_when_the_matched_baseline_lacks_the_mechanism_too():
    from reviewbench.evidence.behaviour import BehaviourMatch

    calls_log = WINDOW.replace("s[:, :2] = 2.0", "s[:, :2] = torch.log(torch.tensor(9.0))")
    d = _desc(summary="Tokens are ranked by the entropy of their attention.")
    like_window = [BehaviourMatch(reference="baseline:window", jaccard=0.98, rank_corr=0.9)]
    assert misstated_flags(d, calls_log, like_window)[0].strength == "proof"  # StreamingLLM computes no entropy
    recency = _desc(summary="Heavy tokens are kept together with the most recent tokens.")
    like_h2o = [BehaviourMatch(reference="baseline:h2o", jaccard=0.95, rank_corr=0.9)]
    flags = misstated_flags(recency, DECAYED, like_h2o)  # H2O's own rule keeps a recent window
    assert flags and flags[0].strength == "indication"


def test_a_rule_of_its_own_aggregated_otherwise_is_the_same_rule_and_a_query_rule_aggregated_is_not():
    """Averaging the scores over the heads or taking a maximum over the queries is anchor 1's cosmetic change of a
    rule that has an operation naming it (keys clustered into codewords); a rule made of attention and a choice of
    queries alone stays a family member when aggregated otherwise, and pooling added to another rule is a part of
    its own (a credited low-rank port pooled like SnapKV is no Loki copy)."""
    from reviewbench.evidence.priorart_evidence import computation_matches

    desc = "# X\n\n## Method summary\nOur own rule.\n"
    clustered = {"attention": 3, "key_clustering": 4, "mean_key": 4, "window_queries": 2, "head_average": 6}
    assert any(m.short_name == "PQCache" and m.level == "same" for m in computation_matches(clustered, desc))
    pooled = {**clustered, "pooling": 7}
    pooled.pop("head_average")
    assert all(m.level != "same" for m in computation_matches(pooled, desc) if m.short_name == "PQCache")
    from reviewbench.evidence.priorart_evidence import _aggregation_only

    assert not _aggregation_only(["head_average"], ["attention", "window_queries", "pooling"])
    assert not _aggregation_only(["question_queries"], ["attention", "key_clustering"])
    assert _aggregation_only(["max_attention", "head_average"], ["attention", "key_clustering|merge"])
