import pytest

from reviewbench.verdict import (
    CriterionScore,
    FlagClaim,
    JudgeVerdict,
    decide,
    decide_tie_break,
    proof_exists,
    tie_break_family,
)


def judge(jid, family, novelty, eff, sound, flags=(), role="primary"):
    return JudgeVerdict(
        judge_id=jid, family=family, provider=family, model="m", role=role,
        scores={"novelty": CriterionScore(score=novelty), "effectiveness": CriterionScore(score=eff),
                "soundness": CriterionScore(score=sound)},
        flags=list(flags),
    )


def flag(fid, quote="keeps the top tokens", where="method.py:3", by="j"):
    return FlagClaim(flag=fid, quote=quote, location=where, raised_by=by)


def test_tie_break_family_is_the_one_that_did_not_write_it():
    assert tie_break_family("anthropic", ["anthropic", "openai"]) == "openai"
    assert tie_break_family("openai", ["anthropic", "openai"]) == "anthropic"
    with pytest.raises(ValueError):
        tie_break_family("openai", ["openai", "openai"])


@pytest.mark.parametrize("author, expected", [("anthropic", "openai"), ("openai", "anthropic")])
def test_split_of_more_than_one_point_calls_the_non_author_family(rubric, author, expected):
    d = decide_tie_break(judge("c", "anthropic", 1, 3, 2), judge("g", "openai", 3, 3, 2), rubric, author)
    assert d.needed and d.family == expected
    assert any("novelty" in r for r in d.reasons)


def test_a_split_of_exactly_one_point_needs_no_tie_break(rubric):
    d = decide_tie_break(judge("c", "anthropic", 2, 3, 2), judge("g", "openai", 3, 4, 1), rubric, "anthropic")
    assert not d.needed and d.family is None


def test_split_of_one_and_a_half_points_does(rubric):
    d = decide_tie_break(judge("c", "anthropic", 2, 3, 2), judge("g", "openai", 2, 4.5, 2), rubric, "anthropic")
    assert d.needed and d.reasons == ["effectiveness: c 3 vs g 4.5 (differ by more than 1)"]


def test_flag_disagreement_calls_a_third_judge(rubric):
    a = judge("c", "anthropic", 2, 3, 2, [flag("MISSING_ATTRIBUTION")])
    d = decide_tie_break(a, judge("g", "openai", 2, 3, 2), rubric, "openai")
    assert d.needed and d.family == "anthropic"


def test_family_offsets_are_subtracted_only_when_the_rubric_says_so(rubric):
    a, b = judge("c", "anthropic", 1, 3, 2), judge("g", "openai", 3, 3, 2)
    offsets = {"openai": {"novelty": 1.5}}
    assert decide_tie_break(a, b, rubric, "anthropic", offsets).needed  # off by default
    on = rubric.model_copy(update={"tie_break": rubric.tie_break.model_copy(update={"subtract_family_offsets": True})})
    assert not decide_tie_break(a, b, on, "anthropic", offsets).needed


def test_final_scores_are_the_per_criterion_median_of_three(rubric):
    vs = [judge("c", "anthropic", 1, 3, 2), judge("g", "openai", 4, 3, 2),
          judge("g2", "openai", 3, 5, 0, role="tie_break")]
    v = decide(vs, rubric, author_family="anthropic")
    assert v.status == "complete" and v.n_judges == 3
    assert v.scores == {"novelty": 3, "effectiveness": 3, "soundness": 2}
    assert v.judge_points == pytest.approx(8 / 13 * 30, abs=0.01)


def test_two_judges_mean_rounded_to_half_points(rubric):
    v = decide([judge("c", "anthropic", 2, 3, 2), judge("g", "openai", 3, 3, 1)], rubric, "anthropic")
    assert v.status == "complete"
    assert v.scores == {"novelty": 2.5, "effectiveness": 3, "soundness": 1.5}


def test_a_needed_tie_break_that_did_not_run_leaves_the_verdict_open(rubric):
    v = decide([judge("c", "anthropic", 0, 3, 2), judge("g", "openai", 4, 3, 2)], rubric, "anthropic")
    assert v.status == "awaiting_tie_break" and v.tie_break.family == "openai"


def test_a_tie_breaker_of_the_author_family_is_not_counted(rubric):
    vs = [judge("c", "anthropic", 0, 3, 2), judge("g", "openai", 4, 3, 2),
          judge("c2", "anthropic", 0, 3, 2, role="tie_break")]
    v = decide(vs, rubric, "anthropic")
    assert v.status == "awaiting_tie_break" and v.judges == ["c", "g"]


def test_flag_raised_by_one_of_two_does_not_stand_until_the_third_agrees(rubric):
    f = flag("UNDISCLOSED_PRIOR_ART")
    two = [judge("c", "anthropic", 1, 3, 2, [f]), judge("g", "openai", 1, 3, 2)]
    v = decide(two, rubric, "openai")
    assert not v.standing_flags and v.status == "awaiting_tie_break"
    v3 = decide([*two, judge("c2", "anthropic", 1, 3, 2, [f], role="tie_break")], rubric, "openai")
    assert [s.flag for s in v3.standing_flags] == ["UNDISCLOSED_PRIOR_ART"]
    v3b = decide([*two, judge("c2", "anthropic", 1, 3, 2, role="tie_break")], rubric, "openai")
    assert not v3b.standing_flags and any("1 of 3" in d.reason for d in v3b.dropped_flags)


def test_flag_without_a_proof_in_the_inputs_is_dropped(rubric):
    f = flag("FABRICATED_EVIDENCE", quote="accuracy 0.99 at 2%")
    vs = [judge("c", "anthropic", 1, 3, 2, [f]), judge("g", "openai", 1, 3, 2, [f])]
    kept = decide(vs, rubric, "openai", corpus=["We report ACCURACY 0.99   at 2% on board A."])
    assert [s.flag for s in kept.standing_flags] == ["FABRICATED_EVIDENCE"]
    gone = decide(vs, rubric, "openai", corpus=["nothing of the kind"])
    assert not gone.standing_flags and all("proof" in d.reason for d in gone.dropped_flags)


def test_proof_matching_ignores_case_and_whitespace_but_not_words():
    assert proof_exists(flag("RULE_VIOLATION", quote="cat  /arena/data/test/x"), ["$ CAT /arena/data/test/x"])
    assert not proof_exists(flag("RULE_VIOLATION", quote="cat /arena/data/test/y"), ["cat /arena/data/test/x"])
    assert not proof_exists(flag("RULE_VIOLATION", quote="  "), ["anything"])


def test_machine_flags_alone_or_confirmed_as_the_rubric_says(rubric):
    vs = [judge("c", "anthropic", 2, 3, 2), judge("g", "openai", 2, 3, 2)]
    rule = flag("RULE_VIOLATION", by="audit")  # deterministic = "alone"
    prior = flag("UNDISCLOSED_PRIOR_ART", by="evidence")  # deterministic = "confirm"
    v = decide(vs, rubric, "anthropic", candidate_flags=[rule, prior])
    assert [s.flag for s in v.standing_flags] == ["RULE_VIOLATION"]
    assert any(d.claim.flag == "UNDISCLOSED_PRIOR_ART" and "confirm" in d.reason for d in v.dropped_flags)


def test_no_judges_gives_no_scores_but_machine_flags_still_stand(rubric):
    v = decide([], rubric, "anthropic", candidate_flags=[flag("RULE_VIOLATION", by="audit")])
    assert v.status == "no_judges" and v.judge_points is None
    assert v.scores == {"novelty": None, "effectiveness": None, "soundness": None}
    assert v.flagged
