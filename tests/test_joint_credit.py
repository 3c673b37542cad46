"""Credit that covers a matched rule together, and acronyms as other works' names (written fresh, after held-out
set 7 was measured: none of its bundles is used here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches, covered_jointly
from reviewbench.flags.misstated import misstated_flags
from reviewbench.flags.prior_art import computation_flags
from reviewbench.priorart import load_index

# decode-time attention summed per token across calls, four sinks protected (names chosen to say nothing)
TALLY = (Path(__file__).parent / "data" / "joint_credit" / "method.py").read_text()


def _desc(builds_on: str) -> str:
    return ("# Tally\n\n## Idea\nA per-token tally of the attention seen while decoding.\n\n## Method summary\n"
            "- Summed attention per token, the top ones kept, four sinks protected.\n\n## Limitations\nNone.\n\n"
            f"## Builds on\n{builds_on}\n")


H2O = "- H2O (arXiv 2306.14048): the heavy-hitter tally is its score.\n"
DMS = "- DMS (arXiv 2506.05345): deciding per token while decoding is ported from it.\n"


def _scope(desc: str):
    c = computation(TALLY)
    return next(m for m in computation_matches(c.features, desc, c.paths) if m.short_name == "SCOPE")


def test_two_credited_rules_that_together_require_every_operation_of_the_matched_rule_cover_it() -> None:
    m = _scope(_desc(H2O + DMS))
    assert m.level == "same" and m.credited and "together" in m.credit.reason
    c = computation(TALLY)
    assert not [f for f in computation_flags(computation_matches(c.features, _desc(H2O + DMS), c.paths), [], TALLY)
                if f.flag == "UNDISCLOSED_PRIOR_ART"]


@pytest.mark.parametrize("builds_on", [H2O, DMS, "- nothing\n"])
def test_one_of_them_alone_covers_nothing_and_the_rule_is_flagged(builds_on: str) -> None:
    assert not _scope(_desc(builds_on)).credited
    c = computation(TALLY)
    flags = computation_flags(computation_matches(c.features, _desc(builds_on), c.paths), [], TALLY)
    assert any(f.flag == "UNDISCLOSED_PRIOR_ART" and "SCOPE" in f.explanation for f in flags)


def test_joint_cover_needs_each_scoring_operation_and_never_covers_a_rule_of_positions() -> None:
    papers = {p.short_name: p for p in load_index().papers}
    assert [p.short_name for p in covered_jointly([papers["H2O"], papers["DMS"]], papers["SCOPE"])] == ["H2O", "DMS"]
    # a rule of positions only (a window and sinks) is a rule of its own: nothing covers it jointly
    assert covered_jointly([papers["H2O"], papers["DMS"]], papers["StreamingLLM"]) == []
    # a paper whose operation neither credited rule requires (K-norm's key norms) stays uncovered
    assert covered_jointly([papers["H2O"], papers["DMS"]], papers["K-norm"]) == [] if "K-norm" in papers else True
    # one credited paper that covers alone is ``covers``' business, not a joint cover
    assert covered_jointly([papers["H2O"]], papers["SCOPE"]) == []


# a score of the keys alone: nothing learned, nothing fitted
KEYS_ONLY = '''import torch

from harness.api import EvictionMethod, Keep, LayerView


class Nu(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        return Keep.from_topk((k - k.mean(dim=1, keepdim=True)).norm(dim=-1), view.budget, view.valid)
'''


def _summary(sentence: str) -> str:
    return (f"# Spread\n\n## Idea\nKeys far from their mean are kept.\n\n## Method summary\n- {sentence}\n\n"
            "## Limitations\nNone.\n\n## Builds on\n- nothing\n")


OTHERS_LEARN = [
    "Deviation from the paper: DMS learns its eviction gate; here each key's distance from the mean decides.",
    "NSA trains a compression branch end to end; this rule keeps the keys farthest from their mean.",
    "D2O learns nothing here, and KVP trains a small scorer network; we only measure distances from the mean key.",
    "(deviation: QJL fits nothing either, CaM learns merge weights; ours scores keys by their spread)",
]
OWN_LEARNING = [
    "A trained gate (learned weights per head) decides which keys stay.",
    "Like DMS, we learn a per-head gate offline and load its weights.",
]


@pytest.mark.parametrize("sentence", OTHERS_LEARN)
def test_learning_said_of_a_paper_named_by_a_short_acronym_is_that_papers(sentence: str) -> None:
    assert not [f for f in misstated_flags(_summary(sentence), KEYS_ONLY) if "learned" in f.explanation]


@pytest.mark.parametrize("sentence", OWN_LEARNING)
def test_learning_this_method_claims_is_still_its_own(sentence: str) -> None:
    assert [f for f in misstated_flags(_summary(sentence), KEYS_ONLY) if f.flag == "MISSTATED_METHOD"]


@pytest.mark.parametrize("line,credited", [
    ("- H2O (arXiv 2306.14048): its tally, taken while decoding.", True),
    ("- H2O (arXiv 2306.14048): the sum is updated while generating, as there.", True),
    ("- H2O (arXiv 2306.14048): used as is while in the decode phase.", True),
    ("- H2O (arXiv 2306.14048) sums every query's attention, while we keep only a window.", False),
    ("- H2O (arXiv 2306.14048) keeps heavy hitters while this method keeps the spread.", False),
])
def test_while_that_opens_a_time_is_no_contrast(line: str, credited: bool) -> None:
    from reviewbench.evidence.priorart_evidence import credit

    papers = {p.short_name: p for p in load_index().papers}
    assert credit(f"# T\n\n## Idea\nA tally.\n\n## Builds on\n{line}\n", papers["H2O"]).credited is credited


def test_scoring_operations_spread_over_several_credits_cover_nothing() -> None:
    # crediting every baseline whose rule holds one part must not clear a published combination of those parts
    papers = {p.short_name: p for p in load_index().papers}
    baselines = [p for p in papers.values() if p.baseline and p.ops]
    combined = [p.short_name for p in papers.values() if p.ops and not p.baseline and covered_jointly(baselines, p)]
    assert combined == []
    assert covered_jointly([papers["SnapKV"], papers["Expected Attention"], papers["Ada-KV"]], papers["LAVa"]) == []
