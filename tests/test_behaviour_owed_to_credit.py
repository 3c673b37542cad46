"""Behaving like a baseline whose rule is a credited rule plus something the code does not compute is the credited
rule's doing: PyramidKV is SnapKV's pooled window score with a per-layer budget ladder, so a method that credits
SnapKV for its score, adds a step of its own and sets no layer budgets keeps much of what PyramidKV keeps (on a few
scored calls, sometimes more than of SnapKV's) without being PyramidKV. A method that computes the ladder too is
PyramidKV whatever it credits. Every snippet here is written for these tests."""

from __future__ import annotations

from reviewbench.evidence.behaviour import BehaviourMatch
from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches
from reviewbench.flags.prior_art import prior_art_flags

HEAD = "import torch\nimport torch.nn.functional as F\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
# SnapKV's score plus an own step: a floor of each quarter's best tokens
FLOORED = HEAD + '''class Floored(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        a = F.max_pool1d(a[:, None], 7, stride=1, padding=3)[:, 0]
        bonus = torch.zeros_like(a)
        edges = torch.linspace(0, view.n_tokens, 5).long().tolist()
        for s, e in zip(edges[:-1], edges[1:]):
            take = a[:, s:e].topk(max(1, view.budget // 16), dim=-1).indices + s
            bonus.scatter_(1, take, 1e6)
        return Keep.from_topk(a + bonus, view.budget, view.valid)
'''
# the same, and a budget per layer growing down the stack: PyramidKV's ladder
LADDER = FLOORED.replace('''    def select(self''', '''    def layer_budgets(self, mean_budget, n_tokens, model):
        n = len(model.attention_layers)
        return [int(mean_budget * (1.5 - i / max(1, n - 1))) for i in range(n)]

    def select(self''')
DESC = ("# Floored window score\n\n## Idea\nA floor per quarter of the context.\n\n## Method summary\nSnapKV's pooled "
        "window score; each quarter keeps its own best tokens first.\n\n## Relation to prior work\nBuilds on SnapKV (Li "
        "et al., 2024, arXiv 2404.14469) for the score; the floor is ours.\n\n## Evidence\nNone.\n\n## Limitations\n"
        "Untuned.\n")
NEAR_PYRAMID = [BehaviourMatch(reference="baseline:pyramidkv", member="pyramidkv", jaccard=0.93, rank_corr=0.97,
                               source="benchmark"),
                BehaviourMatch(reference="baseline:snapkv", member="snapkv", jaccard=0.81, rank_corr=0.9,
                               source="benchmark")]


def _flags(src: str) -> list[str]:
    c = computation(src)
    computed = computation_matches(c.features, DESC, c.paths)
    return [f.flag for f in prior_art_flags(NEAR_PYRAMID, [], {}, DESC, src, ("class", 1), computed=computed,
                                            features=c.features)]


def test_a_likeness_to_a_credited_rule_plus_what_the_code_does_not_compute_is_no_flag() -> None:
    assert not {"layer_budget", "pyramid"} & set(computation(FLOORED).features)
    assert _flags(FLOORED) == []


def test_computing_the_references_own_addition_makes_the_likeness_a_flag() -> None:
    assert {"layer_budget", "pyramid"} <= set(computation(LADDER).features)
    assert _flags(LADDER) == ["UNDISCLOSED_PRIOR_ART"]


def test_without_the_credit_the_likeness_is_a_flag() -> None:
    src = FLOORED
    c = computation(src)
    plain = DESC.replace("Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for the score; the floor is ours.",
                         "The floor is ours.").replace("SnapKV's pooled window score", "A pooled window score")
    computed = computation_matches(c.features, plain, c.paths)
    flags = prior_art_flags(NEAR_PYRAMID, [], {}, plain, src, ("class", 1), computed=computed, features=c.features)
    assert [f.flag for f in flags] == ["UNDISCLOSED_PRIOR_ART"]


def test_novelty_reads_a_likeness_owed_to_the_credited_rule_as_that_rule_s() -> None:
    from pathlib import Path

    from reviewbench.evidence.facts import ComputedFact, EvidenceFacts, SimilarityFact
    from reviewbench.evidence.judge import novelty
    from reviewbench.rubric import load_rubric

    rubric = load_rubric(Path(__file__).resolve().parent.parent / "rubrics" / "default.toml")
    fam = [ComputedFact(short_name="SnapKV", title="t", arxiv=None, level="family",
                        ops=["attention", "window_queries", "pooling"], extra=["block_quota"], credited=True)]

    def near(score: float) -> list[SimilarityFact]:
        return [SimilarityFact(reference="baseline:pyramidkv", implements="pyramidkv", via="behaviour", score=score,
                               credited=False, credit_reason="not attributed")]

    # near PyramidKV, between the cosmetic and the same bar: SnapKV's rule plus a floor of its own
    assert novelty(EvidenceFacts(computed=fam, behaviour=near(0.8), behaviour_measured=True), rubric).score == 2
    # the same tokens: the addition changes nothing measurable, whichever of the two it is near
    assert novelty(EvidenceFacts(computed=fam, behaviour=near(0.95), behaviour_measured=True), rubric).score == 0
    # with the ladder computed it is PyramidKV's rule, uncredited: the likeness is no credited part
    ladder = [*fam, ComputedFact(short_name="PyramidKV", title="t", arxiv=None, level="family",
                                 ops=["attention", "window_queries", "pooling", "layer_budget", "pyramid"],
                                 extra=["block_quota"], credited=False)]
    assert novelty(EvidenceFacts(computed=ladder, behaviour=near(0.8), behaviour_measured=True), rubric).score == 1


# SnapKV's pooled window score with a self-chosen pooling width and a variance-based width test: more than SnapKV's
# rule, which it credits; on board B it keeps almost what a window-attention reference (FINCH's question rule read
# off the closing rows) keeps
WIDTH = HEAD + '''class Width(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        spread = a.std(dim=-1, keepdim=True) / a.mean(dim=-1, keepdim=True).clamp_min(1e-9)
        k = 3 if float(spread.mean()) > 2.0 else 7
        a = F.max_pool1d(a[:, None], k, stride=1, padding=k // 2)[:, 0]
        return Keep.from_topk(a, view.budget, view.valid)
'''
NEAR_WINDOW = [BehaviourMatch(reference="priorart:FINCH", member="finch", jaccard=0.97, rank_corr=0.95,
                              source="benchmark"),
               BehaviourMatch(reference="baseline:snapkv", member="snapkv", jaccard=0.80, rank_corr=0.9,
                              source="benchmark")]


def _window_flags(src: str, desc: str) -> list[str]:
    c = computation(src)
    computed = computation_matches(c.features, desc, c.paths, board="B_online")
    return [f.flag for f in prior_art_flags(NEAR_WINDOW, [], {}, desc, src, ("class", 1), computed=computed,
                                            features=c.features)]


def test_a_likeness_to_a_rule_inside_a_credited_rule_the_code_computes_is_no_flag() -> None:
    assert {"attention", "window_queries", "pooling"} <= set(computation(WIDTH).features)
    assert _window_flags(WIDTH, DESC) == []


def test_the_same_likeness_without_the_credit_or_without_the_credited_rule_is_a_flag() -> None:
    plain = DESC.replace("Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for the score; the floor is ours.",
                         "The floor is ours.").replace("SnapKV's pooled window score", "A pooled window score")
    assert _window_flags(WIDTH, plain) == ["UNDISCLOSED_PRIOR_ART"]
    # crediting SnapKV while computing no pooling: the code does not compute the credited rule
    unpooled = WIDTH.replace("a = F.max_pool1d(a[:, None], k, stride=1, padding=k // 2)[:, 0]\n", "")
    assert "pooling" not in computation(unpooled).features
    assert _window_flags(unpooled, DESC) == ["UNDISCLOSED_PRIOR_ART"]
