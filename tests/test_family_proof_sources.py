"""The family proof (code computes a published rule plus something of its own, behaviour keeps that rule's tokens) is
decided where the method is scored; the bank, when measured too, clears it only by showing a variant (near the rule
but not told apart from its neighbours), never by showing the method far from the rule (that would be a dodge).

The numbers are written for these tests (none is a held-out case's measurement).
"""

from __future__ import annotations

from reviewbench.evidence.behaviour import BehaviourMatch
from reviewbench.evidence.priorart_evidence import ComputationMatch, Credit
from reviewbench.flags.prior_art import computation_flags

SRC = "import torch\n\nclass M:\n    def select(self, view):\n        a = view.attention()\n        return a.sum(1)\n"


def _family(credited: bool = False) -> ComputationMatch:
    return ComputationMatch(short_name="FINCH", title="FINCH", arxiv="2408.00167", rule="question attention summed",
                            matched={"attention": 5, "question_queries": 0}, extra=["attention_output"],
                            level="family", credited=credited,
                            credit=Credit(credited=credited, reason="attributed" if credited else "not named"))


def _m(ref: str, j: float, source: str) -> BehaviourMatch:
    return BehaviourMatch(reference=ref, jaccard=j, rank_corr=j, source=source)  # type: ignore[arg-type]


def _scored(top: float, second: float) -> list[BehaviourMatch]:
    return [_m("priorart:FINCH", top, "benchmark"), _m("priorart:CAOTE", second, "benchmark"),
            _m("baseline:snapkv", 0.4, "benchmark")]


def _bank(top_ref: str, top: float, second: float) -> list[BehaviourMatch]:
    other = "priorart:CAOTE" if top_ref != "priorart:CAOTE" else "priorart:FINCH"
    return [_m(top_ref, top, "bank"), _m(other, second, "bank"), _m("baseline:snapkv", 0.3, "bank")]


def _flags(scored: list[BehaviourMatch], bank: list[BehaviourMatch] | None = None, credited: bool = False) -> list[str]:
    return [f.flag for f in computation_flags([_family(credited)], scored, SRC, bank=bank or ())]


def test_one_source_alone_decides_when_only_one_was_measured() -> None:
    assert _flags(_scored(0.88, 0.7)) == ["UNDISCLOSED_PRIOR_ART"]
    assert _flags(_scored(0.88, 0.82)) == []  # not told apart from the next reference
    assert _flags(_scored(0.7, 0.4)) == []  # not substantially the same


def test_with_both_sources_a_bank_showing_a_variant_clears_it() -> None:
    assert _flags(_scored(0.86, 0.72), _bank("priorart:FINCH", 0.91, 0.6)) == ["UNDISCLOSED_PRIOR_ART"]
    # the bank shows a variant: near the rule but not told apart from its neighbour
    assert _flags(_scored(0.86, 0.72), _bank("priorart:FINCH", 0.84, 0.8)) == []
    assert _flags(_scored(0.86, 0.72), _bank("priorart:CAOTE", 0.85, 0.8)) == []  # FINCH 0.8 on the bank: near too


def test_a_method_that_behaves_otherwise_on_the_bank_cannot_dodge_it() -> None:
    # far from the rule on the bank (it told the bank apart, or the bank names another rule): the scored calls stand
    assert _flags(_scored(0.86, 0.72), _bank("priorart:FINCH", 0.5, 0.3)) == ["UNDISCLOSED_PRIOR_ART"]
    assert _flags(_scored(0.86, 0.72), _bank("priorart:CAOTE", 0.9, 0.6)) == ["UNDISCLOSED_PRIOR_ART"]


def test_credit_clears_it_whatever_the_sources_say() -> None:
    assert _flags(_scored(0.95, 0.6), _bank("priorart:FINCH", 0.95, 0.6), credited=True) == []
