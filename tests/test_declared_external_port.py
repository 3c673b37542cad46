"""Issue 23: a description that declares the whole method a port of a work the index does not hold (cited by arXiv
id, "Not a new method: the rule is the paper's") may be porting an earlier or parallel source of a rule the index
holds: the computation match is an indication for a judge then, not a proof. And a rule that may read attention but
does not require it (a merge's raters) reads it off whichever queries the board hands over.

Descriptions and feature sets written fresh for these tests (not a held-out case).
"""

from __future__ import annotations

from reviewbench.evidence.priorart_evidence import computation_matches, declared_port
from reviewbench.flags.prior_art import computation_flags

HEADED = """# Saliency carry-over, ported to eviction

## What this is
A training-free port of the saliency carry-over of Quillfeather (Okonkwo et al., 2019, arXiv 1907.01234).
Not a new method: the scoring rule is the paper's.

## Method summary
Each token's score is the attention it receives from every query, summed; the top tokens stay.

## Limitations
Some.
"""

OWN = HEADED.replace("Not a new method: the scoring rule is the paper's.",
                     "Not a new method on its own: we add a decay of our own.")
SILENT = """# Saliency carry-over

## Method summary
Each token's score is the attention it receives from every query, summed; the top tokens stay.

## Relation to prior work
Nothing close that we know of.
"""
# every query's attention summed per token (H2O's rule)
SUMMED = {"attention": 4, "accumulate": 5, "all_queries": 0, "head_average": 6}


def test_a_sentence_opening_with_not_a_new_method_declares_the_port_of_the_work_named_before_it() -> None:
    port = declared_port(HEADED)
    assert port is not None and port.short_name == "Quillfeather" and port.arxiv == "1907.01234"
    assert declared_port(OWN) is None


def test_a_declared_port_of_a_work_outside_the_index_makes_the_rule_an_indication() -> None:
    got = [m for m in computation_matches(SUMMED, HEADED) if m.short_name == "H2O"]
    assert got and got[0].declared is not None and "Quillfeather" in got[0].declared
    flags = computation_flags(got, [], "x = 1\n" * 8)
    assert flags and flags[0].strength == "indication" and "does not hold" in flags[0].explanation


def test_without_the_declaration_the_rule_is_a_proof() -> None:
    got = [m for m in computation_matches(SUMMED, SILENT) if m.short_name == "H2O"]
    assert got and got[0].declared is None
    flags = computation_flags(got, [], "x = 1\n" * 8)
    assert flags and flags[0].strength == "proof"


def test_a_merge_whose_raters_are_the_window_queries_is_the_merge_rule() -> None:
    merged = {"key_similarity": 3, "merge": 5, "attention": 4, "window_queries": 0, "recent": 6}
    m = next(m for m in computation_matches(merged, SILENT, board="C") if m.short_name == "KVMerger")
    assert m.level == "same"
    # a rule that names its queries itself keeps another choice of queries as a difference
    repeat = {"reconstruction": 0, "max_attention": 4, "attention": 3, "window_queries": 0}
    k = next(m for m in computation_matches(repeat, SILENT) if m.short_name == "KVzip")
    assert k.level == "family"


def test_a_rule_one_return_path_computes_carries_the_declared_port_too() -> None:
    # the whole reads as H2O's rule plus a norm (two branches joined); the path that returns at line 12 is H2O's alone
    whole = {**SUMMED, "key_norm": 9}
    got = [m for m in computation_matches(whole, HEADED, paths=[(12, SUMMED)]) if m.short_name == "H2O"]
    assert got and got[0].branch == 12 and got[0].declared is not None
    flags = computation_flags(got, [], "x = 1\n" * 14)
    assert flags and flags[0].strength == "indication"
