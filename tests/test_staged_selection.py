"""Issue 23, item 4: a description that states a staged selection (a shortlist re-ranked by a second score, a
second pass over the first one's candidates) against code that ranks once. Every snippet and sentence is written
for these tests."""

from __future__ import annotations

from reviewbench.evidence.stated import structures
from reviewbench.flags.misstated import misstated_flags

HEAD = "import torch\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

ONE_STAGE = HEAD + '''class Sieve(EvictionMethod):
    name = "sieve"

    def select(self, view: LayerView) -> Keep:
        score = view.keys.float().norm(dim=-1)
        score[:, :4] = float("inf")
        idx = score.topk(view.budget, dim=-1).indices
        return Keep(idx.sort(dim=-1).values)
'''

TWO_STAGES = HEAD + '''class Sieve(EvictionMethod):
    name = "sieve"
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        coarse = view.keys.float().norm(dim=-1)
        cand = coarse.topk(min(3 * view.budget, coarse.shape[-1]), dim=-1).indices
        fine = view.group(view.attention(view.queries[:, -8:]).sum(dim=1), "mean")
        pick = fine.gather(-1, cand).topk(view.budget, dim=-1).indices
        return Keep(cand.gather(-1, pick).sort(dim=-1).values)
'''

THRESHOLD_THEN_RANK = HEAD + '''class Sieve(EvictionMethod):
    name = "sieve"

    def select(self, view: LayerView) -> Keep:
        att = view.group(view.attention(view.queries[:, -4:]).mean(dim=1), "max")
        passed = att >= att.mean(dim=-1, keepdim=True)
        vn = view.values.float().norm(dim=-1).masked_fill(~passed, -1.0)
        return Keep(vn.topk(view.budget, dim=-1).indices)
'''

SHORTLIST = ("# Sieve\n\n## Idea\nCheap first, exact second.\n\n## Method summary\n- {}\n\n## Limitations\n"
             "Untested at 2 %.\n")


def _misstated(sentence: str, source: str) -> list[str]:
    return [f.strength for f in misstated_flags(SHORTLIST.format(sentence), source) if f.flag == "MISSTATED_METHOD"]


def test_a_shortlist_reranked_against_one_ranking_is_a_proof() -> None:
    said = "A shortlist of three times the budget by key norm is re-ranked by the window queries' attention."
    assert "staged" not in structures(ONE_STAGE)  # the kept indices put in order are no second stage
    assert _misstated(said, ONE_STAGE) == ["proof"]


def test_two_stage_wording_against_one_ranking_is_a_proof() -> None:
    assert _misstated("A two-stage selection: key norms prune, then attention picks the survivors.", ONE_STAGE)


def test_the_shortlist_gathered_and_ranked_again_is_not_flagged() -> None:
    said = "A shortlist of three times the budget by key norm is re-ranked by the window queries' attention."
    assert "staged" in structures(TWO_STAGES)
    assert _misstated(said, TWO_STAGES) == []


def test_a_data_dependent_threshold_before_the_ranking_is_a_stage() -> None:
    said = "Candidates above the mean attention are re-ranked by their value norm in a second pass."
    assert "staged" in structures(THRESHOLD_THEN_RANK)
    assert not [s for s in _misstated(said, THRESHOLD_THEN_RANK) if s == "proof"]


def test_ranking_again_at_a_later_step_is_no_staged_claim() -> None:
    # decode-time wording: "re-rank" as "rank again when the cap is reached", no shortlist named
    assert _misstated("At every eviction block the cache is re-ranked by the newest query's attention.",
                      ONE_STAGE) == [] or all(
        "staged" not in f for f in _misstated("The cache is re-ranked at each block.", ONE_STAGE))


def test_a_shortlist_named_as_another_works_is_no_claim() -> None:
    said = "Unlike Quest, which re-ranks a shortlist of pages, we rank every token once by key norm."
    assert _misstated(said, ONE_STAGE) == []


def test_candidates_that_re_enter_are_no_staged_claim() -> None:
    said = "Evicted candidates re-enter the cache when their attention recovers."
    assert _misstated(said, ONE_STAGE) == []
    assert "proof" in _misstated("Candidates are re-scored by their value norm before the final pick.", ONE_STAGE)
