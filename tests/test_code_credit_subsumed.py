"""Issue 23: code like a baseline's, in a port that credits a paper whose rule is that baseline's plus one operation
of its own (SAGE-KV's last-token attention with a head-level top-k holds TOVA's rule), owes nothing more; credit of a
paper whose rule does not hold the baseline's explains nothing. The snippet and sentences are written for this test."""

from __future__ import annotations

from reviewbench.evidence.similarity import baseline_sources, compare, public_references
from reviewbench.flags.prior_art import prior_art_flags

SOURCE = '''from harness.api import EvictionMethod, Keep, LayerView


class LastLook(EvictionMethod):
    name = "last_look"
    query_window = 1
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(view.queries[:, -1:])[:, 0]
        valid = view.valid_mask()
        scores = view.group(attn, "max")
        recent = max(8, view.budget // 8)
        scores[:, : self.sinks] = float("inf")
        scores[:, -recent:] = float("inf")
        k = min(view.budget, int(valid.sum(dim=1).min()))
        idx = scores.masked_fill(~valid, float("-inf")).topk(k, dim=-1).indices.sort(dim=-1).values
        return Keep(idx)
'''


def _desc(builds_on: str) -> str:
    return ("# Last look\n\n## Idea\nThe last context token's attention picks what stays.\n\n## Method summary\n"
            "- Per KV head, the maximum over its query heads of the last token's attention; four sink tokens and a "
            "recent window are kept beside the top tokens.\n\n## Limitations\nOne query only.\n\n"
            f"## Builds on\n{builds_on}\n")


def _flags(description: str) -> set[str]:
    code = compare(SOURCE, {**baseline_sources(), **public_references()})
    assert code[0].reference == "baseline:tova" and code[0].score >= 0.6  # the code is TOVA's, by construction
    return {f.flag for f in prior_art_flags([], code, {}, description, SOURCE, ("class LastLook", 4))}


def test_credit_of_a_rule_that_holds_the_baseline_explains_its_code() -> None:
    desc = _desc("- This is a port of SAGE-KV (arXiv 2503.08879); the method is theirs, with a group maximum.")
    assert _flags(desc) == set()


def test_the_same_code_uncredited_is_flagged() -> None:
    assert "MISSING_ATTRIBUTION" in _flags(_desc("- Nothing published; our own design."))


def test_credit_of_a_rule_that_does_not_hold_the_baseline_explains_nothing() -> None:
    # StreamingLLM's sinks and window are used, but its rule holds no attention score: TOVA's code is still owed
    desc = _desc("- We use StreamingLLM's attention sinks and recent window (arXiv 2309.17453) beside our score.")
    assert "MISSING_ATTRIBUTION" in _flags(desc)


def test_credit_of_the_baseline_itself_still_works() -> None:
    assert _flags(_desc("- We build on TOVA (arXiv 2401.06104): its last-query attention, per head here.")) == set()


def test_credit_of_a_rule_that_adds_only_a_budget_schedule_explains_the_code() -> None:
    # LazyLLM's rule is the last token's attention plus progressive per-layer budgets: how many tokens each layer keeps
    # is no part of the score the shared code computes
    desc = _desc("- A port of LazyLLM (arXiv 2407.14057): its last-token ranking, with its deeper layers keeping fewer.")
    assert _flags(desc) == set()


def test_credit_of_a_rule_that_adds_scoring_operations_explains_nothing() -> None:
    # CAKE's rule ranks by attention's mean and variance with layer budgets: more than a schedule beside TOVA's score
    desc = _desc("- We use CAKE's layer preference (arXiv 2503.12491) for the layer budgets only.")
    assert "MISSING_ATTRIBUTION" in _flags(desc)
