"""Issue 23: an uncredited published rule computed beside a credited paper's rule, and nothing else, is a port of the
uncredited rule ("same"): crediting one paper for a part does not make the other's rule the author's own. What keeps
a method a family member: only a choice of queries, pooling or aggregation beside the rule, or a rule whose one
distinctive operation is a comparison of attention with a bar (too common to name a paper beside another's rule).

Feature sets and descriptions written fresh for these tests (not a held-out case).
"""

from __future__ import annotations

from reviewbench.evidence.priorart_evidence import computation_matches
from reviewbench.flags.prior_art import computation_flags


def _desc(builds: str) -> str:
    return ("# Folded refill\n\n## Idea\nA rolling pot.\n\n## Method summary\nThe context is poured chunk by chunk into "
            "a fixed pot and cut back after each chunk.\n\n## Relation to prior work\nNothing close.\n\n## Evidence\n"
            f"None.\n\n## Limitations\nSome.\n\n## Builds on\n{builds}\n")


KVZIP = _desc("KVzip (Kim et al., arXiv 2505.23416): we use its reconstruction queries to score the pot.")
NONE = _desc("None.")
SNAPKV = _desc("SnapKV (Li et al., arXiv 2404.14469): we use its observation-window attention.")

# InfiniPot's chunked refill scored by the reconstruction queries (KVzip's pass)
REFILL = {"attention": 4, "chunked_refill": 6, "reconstruction": 0, "sinks": 8, "head_average": 5}


def _match(features: dict[str, int], desc: str, name: str):
    return next((m for m in computation_matches(features, desc) if m.short_name == name), None)


def test_a_rule_beside_a_credited_rule_is_that_rule() -> None:
    m = _match(REFILL, KVZIP, "InfiniPot")
    assert m is not None and m.level == "same" and m.beside == "KVzip" and not m.credited
    flags = computation_flags([m], [], "x = 1\n" * 10)
    assert flags and flags[0].strength == "proof" and "KVzip, which the description credits" in flags[0].explanation


def test_without_the_credit_the_extra_is_a_mechanism_of_its_own() -> None:
    m = _match(REFILL, NONE, "InfiniPot")
    assert m is not None and m.level == "family" and m.beside is None


def test_only_queries_pooling_or_aggregation_beside_a_rule_keep_it_a_family_member() -> None:
    # the keys' norms read against the window's attention, SnapKV credited: key norm is a published rule, but what
    # the code adds around it is a choice of queries (SnapKV's), not a mechanism
    f = {"key_norm": 3, "attention": 4, "window_queries": 0, "pooling": 5}
    m = _match(f, SNAPKV, "K-norm")
    assert m is not None and m.level == "family" and m.beside is None


def test_a_bar_on_attention_alone_names_no_paper_beside_a_credited_rule() -> None:
    # the reconstruction queries' maximum (KVzip's, credited) and a cut-off on attention: Scissorhands and FastGen
    # compare attention with a bar too, but so does any method with a cut-off
    f = {"attention": 4, "attention_threshold": 6, "reconstruction": 0, "max_attention": 5, "window_queries": 0}
    for name in ("Scissorhands", "CORM"):
        m = _match(f, KVZIP, name)
        assert m is None or m.level == "family"
