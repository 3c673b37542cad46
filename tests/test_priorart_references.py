"""The published rules beyond the baselines (``harness/methods/priorart``): a matrix over every reference and each of
its settings (kvpress style), the registry reviewbench reads without torch, and what a behavioural match to one of
them decides (a port caught whatever its code looks like; a credited port capped; an honest neighbour left alone)."""

from __future__ import annotations

import pytest
import torch

from harness.api import Keep, LayerView, ModelInfo
from harness.fingerprint import configured
from harness.fingerprint_grid import label_of, prior_art_families, reference_families
from harness.methods import PRIOR_ART_METHODS, REFERENCE_METHODS

INFO = ModelInfo(name="t", n_layers=8, n_heads=6, n_kv_heads=2, head_dim=16, rope_theta=10000.0)
SPECS = [s for specs in prior_art_families().values() for s in specs]


def _view(method, budget: int, t: int = 160, board: str = "A", with_queries: bool = True, seed: int = 0) -> LayerView:
    g = torch.Generator().manual_seed(seed)
    keys, values = torch.randn(2, t, 16, generator=g), torch.randn(2, t, 16, generator=g)
    w = min(t, max(int(getattr(method, "query_window", 0)), 1)) if with_queries else 0
    queries = torch.randn(6, w, 16, generator=g) if w else None
    return LayerView(layer=3, keys=keys, values=values, positions=torch.arange(t).expand(2, t), queries=queries,
                     budget=budget, board=board, phase="prefill", model=INFO,
                     query_positions=torch.arange(t - w, t) if w else None)


def _check(keep, view: LayerView) -> list[set[int]]:
    assert isinstance(keep, Keep), type(keep)
    sets = []
    for idx in keep.indices:
        got = idx.tolist()
        assert len(got) == len(set(got)) and all(0 <= i < view.n_tokens for i in got)
        sets.append(set(got))
    assert sum(map(len, sets)) <= view.budget * view.n_kv_heads
    return sets


def test_every_reference_names_an_index_paper_and_is_registered():
    from reviewbench.priorart import load_index

    assert len(prior_art_families()) >= 20
    index = load_index()
    for paper, specs in prior_art_families().items():
        assert index.by_name(paper) is not None, paper
        for spec in specs:
            assert spec.partition("?")[0] in PRIOR_ART_METHODS and spec.partition("?")[0] in REFERENCE_METHODS
            assert label_of(spec) == f"priorart:{paper}"
    assert set(reference_families()) >= {f"priorart:{p}" for p in prior_art_families()} | {"baseline:snapkv"}
    # no reference stands for a board baseline: those have their own families
    assert not set(prior_art_families()) & {p.short_name for p in index.baselines().values()}


@pytest.mark.parametrize("spec", SPECS)
def test_every_setting_keeps_a_valid_deterministic_set_within_budget(spec):
    method = configured(spec)
    method.setup(INFO)
    for budget, board in ((8, "A"), (40, "B_online")):
        view = _view(method, budget, board=board)
        first = _check(method.select(view), view)
        assert _check(configured(spec).select(_view(method, budget, board=board)), view) == first, spec
    full = _view(method, 200, t=120)
    assert all(len(s) == 120 for s in _check(method.select(full), full)), "a budget over the prompt keeps it all"
    blind = _view(method, 30, with_queries=False)
    _check(method.select(blind), blind)  # no queries (board B without a window): still an answer


def test_a_rule_follows_the_content_not_the_seed_of_a_view():
    """Two different layers' content give different choices (no reference is a position rule in disguise); a paper
    whose published rule is positions only (LaCache's ladder: the index's ops are positional) is one openly."""
    from reviewbench.priorart import load_index

    positional = {"layer_span", "sinks", "recent", "uniform_positions"}
    for name, cls in PRIOR_ART_METHODS.items():
        ops = {o for op in (load_index().by_name(cls.paper).ops or ()) for o in op.split("|")}
        if ops and ops <= positional:
            continue
        m = cls()
        m.setup(INFO)
        a = _check(m.select(_view(m, 768, t=2048, seed=1)), _view(m, 768, t=2048, seed=1))
        b = _check(m.select(_view(m, 768, t=2048, seed=2)), _view(m, 768, t=2048, seed=2))
        assert a != b, name


# --- what a behavioural match to a published rule decides ----------------------------------------------------------
def _m(reference: str, jaccard: float, member: str = ""):
    from reviewbench.evidence.behaviour import BehaviourMatch

    return BehaviourMatch(reference=reference, member=member, jaccard=jaccard, rank_corr=jaccard, source="benchmark")


def _desc(builds: str = "None.") -> str:
    return ("# Output shift\n\n## Idea\nKeep what moves the read-out.\n\n## Method summary\nA score per token.\n\n"
            f"## Relation to prior work\nNone.\n\n## Evidence\nNone.\n\n## Limitations\nSome.\n\n## Builds on\n{builds}\n")


def _flags(matches, description: str):
    from reviewbench.flags.prior_art import prior_art_flags

    return prior_art_flags(matches, [], {}, description, "class M:\n    pass\n", ("class M:", 1))


def test_a_port_told_apart_from_every_other_reference_is_undisclosed_prior_art_naming_the_paper():
    flags = _flags([_m("priorart:CAOTE", 0.93, "pa_caote"), _m("priorart:FINCH", 0.77), _m("baseline:snapkv", 0.7)],
                   _desc("SnapKV's observation window (arXiv 2404.14469): we use its window of queries."))
    assert [f.flag for f in flags] == ["UNDISCLOSED_PRIOR_ART"] and flags[0].raised_by == "evidence:behaviour"
    assert "2504.14051" in flags[0].explanation and "pa_caote" in flags[0].explanation


def test_a_variant_between_two_published_rules_is_neither():
    assert not _flags([_m("priorart:FINCH", 0.93), _m("priorart:CAOTE", 0.87)], _desc())
    # keeping a rule's tokens outright needs no margin
    assert _flags([_m("priorart:CORM", 0.99), _m("priorart:CAOTE", 0.95)], _desc())


def test_a_credited_reference_as_near_explains_the_behaviour_and_a_credited_rule_removes_the_flag():
    # CAKE's rule keeps nearly SnapKV's tokens on the bank: a credited SnapKV port is not an uncredited CAKE port
    assert not _flags([_m("baseline:snapkv", 0.95), _m("priorart:CAKE", 0.93)],
                      _desc("SnapKV (arXiv 2404.14469): we reuse its pooled window attention unchanged."))
    assert not _flags([_m("priorart:CAOTE", 0.95), _m("priorart:FINCH", 0.7)],
                      _desc("CAOTE (arXiv 2504.14051): we use its attention-output error as our token score."))


def test_a_published_rule_matched_by_behaviour_is_named_as_prior_work_and_caps_novelty():
    from reviewbench.evidence.facts import EvidenceFacts, SimilarityFact
    from reviewbench.evidence.judge import novelty, prior_work
    from reviewbench.rubric import load_rubric
    from pathlib import Path

    rubric = load_rubric(Path(__file__).resolve().parent.parent / "rubrics" / "default.toml")
    fact = SimilarityFact(reference="priorart:KeyDiff", implements=None, via="behaviour", score=0.95, credited=True,
                          credit_reason="attributed in Builds on")
    facts = EvidenceFacts(behaviour=[fact], behaviour_measured=True)
    assert novelty(facts, rubric).score <= 1
    assert prior_work(facts)[0].arxiv_id == "2504.15364"


@pytest.mark.slow
def test_a_disguised_port_of_a_published_rule_is_caught_on_the_bank_and_its_credited_twin_is_not(tmp_path):
    """tests/data/output_shift: CAOTE's rule written from scratch (own names, loops, a hand-made read-out), described
    as new with only SnapKV credited. Its behaviour is CAOTE's reference's; crediting CAOTE removes the flag."""
    import shutil
    from pathlib import Path

    from reviewbench.evidence.behaviour import behaviour_evidence

    port = Path(__file__).resolve().parent / "data" / "output_shift"
    ev = behaviour_evidence(port, {})
    top = ev.matches[0]
    assert top.reference == "priorart:CAOTE" and top.jaccard >= 0.97, ev.matches[:3]
    description = (port / "DESCRIPTION.md").read_text()
    flags = _flags(ev.matches, description)
    assert [f.flag for f in flags] == ["UNDISCLOSED_PRIOR_ART"]
    credited = description.replace("## Builds on\n", "## Builds on\nCAOTE (arXiv 2504.14051): we use its "
                                                      "attention-output error as the token score.\n")
    assert not _flags(ev.matches, credited)


def _computed(short: str, level: str = "family", credited: bool = False):
    from reviewbench.evidence.priorart_evidence import ComputationMatch, Credit

    return ComputationMatch(short_name=short, title=f"{short} paper", arxiv=None, rule="a rule", matched={"attention": 3},
                            extra=["entropy"], level=level, credited=credited,
                            credit=Credit(credited=credited, reason="attributed" if credited else "not named"))


def test_code_building_on_a_rule_and_behaviour_nearest_that_rule_agree_on_an_uncredited_paper():
    from reviewbench.flags.prior_art import computation_flags

    src = "a\nb\nscore = attention(x)\n"
    agree = [_m("priorart:Q-Filters", 0.8), _m("priorart:FINCH", 0.66), _m("baseline:snapkv", 0.6)]
    flags = computation_flags([_computed("Q-Filters")], agree, src)
    assert [f.flag for f in flags] == ["UNDISCLOSED_PRIOR_ART"] and flags[0].strength == "proof"
    assert "Q-Filters" in flags[0].explanation and "0.80" in flags[0].explanation
    # behaviour between two rules, below related, nearest another paper, or the paper credited: nothing
    assert not computation_flags([_computed("Q-Filters")], [_m("priorart:Q-Filters", 0.8), _m("priorart:FINCH", 0.75)], src)
    assert not computation_flags([_computed("Q-Filters")], [_m("priorart:Q-Filters", 0.7), _m("priorart:FINCH", 0.5)], src)
    assert not computation_flags([_computed("Q-Filters")], [_m("priorart:FINCH", 0.8), _m("priorart:Q-Filters", 0.6)], src)
    assert not computation_flags([_computed("Q-Filters", credited=True)], agree, src)
    # what the code adds is a credited paper's own mechanism: that paper explains the code (its rule holds the other's)
    reuse = _computed("Q-Filters").model_copy(update={"extra": ["layer_reuse"]})
    credited = _computed("Other", credited=True).model_copy(update={"matched": {"attention": 3, "layer_reuse": 0}})
    assert not computation_flags([credited, reuse], agree, src)
    sinks = _computed("Sinks", credited=True).model_copy(update={"matched": {"sinks": 0, "recent": 0}})
    assert computation_flags([sinks, reuse], agree, src), "crediting a paper for the sinks covers no attention rule"
    # a baseline's rule works the same way
    assert computation_flags([_computed("SnapKV") .model_copy(update={"baseline": "snapkv"})],
                             [_m("baseline:snapkv", 0.85), _m("priorart:CAKE", 0.7)], src)


def test_a_published_rule_behaviour_cannot_tell_apart_leaves_novelty_to_the_credited_baseline():
    """CAKE's reference keeps nearly SnapKV's tokens: a credited SnapKV derivative equally near both is judged by its
    credited baseline, not made 'the same method' as CAKE."""
    from reviewbench.evidence.behaviour import BehaviourEvidence
    from reviewbench.evidence.gather import gather_facts
    from reviewbench.evidence.priorart_evidence import PriorArtEvidence
    from reviewbench.stages.evidence import EvidenceData

    beh = BehaviourEvidence(matches=[_m("baseline:snapkv", 0.84), _m("priorart:CAKE", 0.84), _m("priorart:FINCH", 0.6)],
                            errors={}, budgets=[], bank_version=2)
    ev = EvidenceData(citations=[], prior_art=PriorArtEvidence(query="", features={}, summary_query="", hits=[], computed=[]), code=[], behaviour=beh, digest=[],
                      candidate_flags=[])
    facts = gather_facts(evidence=ev, ledger=None, sections_missing=[], description=_desc("SnapKV (arXiv 2404.14469)."),
                         earlier_names={}, board=None, board_reason="test")
    assert [f.reference for f in facts.behaviour] == ["baseline:snapkv"]
    told = BehaviourEvidence(matches=[_m("priorart:CAKE", 0.95), _m("baseline:snapkv", 0.8)], errors={}, budgets=[],
                             bank_version=2)
    facts = gather_facts(evidence=ev.model_copy(update={"behaviour": told}), ledger=None, sections_missing=[],
                         description=_desc(), earlier_names={}, board=None, board_reason="test")
    assert [f.reference for f in facts.behaviour] == ["priorart:CAKE", "baseline:snapkv"]
