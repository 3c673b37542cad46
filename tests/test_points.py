
import pytest

from reviewbench.points import BoardEntry, paired_bootstrap, score_submission, standings


def entry(eid, scores, agent="x", kind="submission", flagged=False):
    return BoardEntry(id=eid, agent=agent, kind=kind, board="A", flagged=flagged,
                      item_scores={f"i{k}": v for k, v in enumerate(scores)})


def points(rubric, measured, earlier, rule_set=None, novelty=3.0, flagged=False, agent="a1", jp=20.0):
    name, rules = rubric.rule_set(rule_set)
    return score_submission(submission="a1-002", agent=agent, board="A", judge_points=jp, novelty=novelty,
                            flagged=flagged, measured=measured, earlier=earlier, rules=rules,
                            rule_set_name=name, flag_effect=rubric.flag_effect)


BASE = [0.5, 0.6, 0.7, 0.4, 0.9, 0.3, 0.8, 0.55, 0.65, 0.45] * 5


def test_gain_exactly_at_the_gate_pays(rubric):
    # Every item gains exactly 0.005, so every bootstrap mean and the CI's lower end are exactly 0.005.
    best = entry("snapkv", [0.0] * 32, kind="baseline")
    p = points(rubric, entry("c", [0.005] * 32), [best])
    assert p.gate.lower == 0.005 and p.gate.passes and p.benchmark_points == 10


def test_gain_at_the_gate_up_to_float_rounding_pays(rubric):
    best = entry("snapkv", BASE, kind="baseline")
    p = points(rubric, entry("c", [s + 0.005 for s in BASE]), [best])
    assert p.gate.lower == pytest.approx(0.005) and p.gate.passes


def test_gain_just_below_the_gate_does_not(rubric):
    best = entry("snapkv", BASE, kind="baseline")
    p = points(rubric, entry("c", [s + 0.0049 for s in BASE]), [best])
    assert not p.gate.passes and p.benchmark_points == 0


def test_large_mean_gain_with_a_wide_ci_does_not_pay(rubric):
    best = entry("snapkv", [0.5] * 20, kind="baseline")
    noisy = entry("c", [1.0, 0.0] * 10)  # mean gain 0, huge spread
    lucky = entry("c", [1.0] * 3 + [0.5] * 17)  # mean gain +0.075 from 3 items of 20
    assert not points(rubric, noisy, [best]).gate.passes
    g = points(rubric, lucky, [best]).gate
    assert g.gain == pytest.approx(0.075) and g.lower >= 0  # decided by the CI, not by the mean


def test_the_bar_is_the_best_unflagged_earlier_entry(rubric):
    weak = entry("random", [0.1] * 50, kind="baseline")
    strong = entry("a2-001", [0.9] * 50, agent="a2")
    cheat = entry("a3-001", [1.0] * 50, agent="a3", flagged=True)
    p = points(rubric, entry("c", [0.95] * 50), [weak, strong, cheat])
    assert p.gate.reference == "a2-001" and p.benchmark_points == 10


def test_first_on_board_bonus_needs_novelty_two(rubric):
    base = [entry("snapkv", BASE, kind="baseline")]  # baselines do not make it second
    assert points(rubric, None, base, novelty=2.0).first_on_board_points == 20
    assert points(rubric, None, base, novelty=1.5).first_on_board_points == 0
    later = points(rubric, None, [*base, entry("a2-001", BASE, agent="a2")], novelty=5)
    assert later.first_on_board_points == 0 and any("not the first" in r for r in later.reasons)


def test_total_is_judge_plus_benchmark_plus_bonus(rubric):
    base = [entry("snapkv", BASE, kind="baseline")]
    p = points(rubric, entry("c", [s + 0.05 for s in BASE]), base, novelty=2, jp=18.46)
    assert (p.judge_points, p.benchmark_points, p.first_on_board_points, p.total) == (18.46, 10, 20, 48.46)


def test_a_standing_flag_zeroes_the_submission_and_costs_twenty(rubric):
    base = [entry("snapkv", BASE, kind="baseline")]
    p = points(rubric, entry("c", [s + 0.05 for s in BASE]), base, flagged=True)
    assert p.total == 0 and p.penalty == 20 and p.flagged


def test_no_measured_results_means_no_benchmark_points_and_says_why(rubric):
    p = points(rubric, None, [entry("snapkv", BASE, kind="baseline")])
    assert p.benchmark_points == 0 and any("no measured results" in r for r in p.reasons)


def test_seed_rules_do_not_pay_for_beating_only_your_own_best(rubric):
    leader = entry("a2-001", [0.9] * 50, agent="a2")
    mine = entry("a1-001", [0.5] * 50, agent="a1")
    cand = entry("a1-002", [0.6] * 50, agent="a1")
    assert points(rubric, cand, [leader, mine]).benchmark_points == 0
    alt = points(rubric, cand, [leader, mine], rule_set="own_best")
    assert alt.benchmark_points == 10 and alt.gate.reference == "a1-001"


def test_agent_total_counts_the_best_submission_per_board_minus_penalties(rubric):
    def sp(sub, agent, board, total, flagged=False):
        from reviewbench.points import SubmissionPoints
        return SubmissionPoints(submission=sub, agent=agent, board=board, rule_set="seed", judge_points=total,
                                benchmark_points=0, first_on_board_points=0, flagged=flagged,
                                penalty=20 if flagged else 0, total=0 if flagged else total)

    rows = [sp("a1-001", "a1", "A", 10), sp("a1-002", "a1", "A", 25), sp("a1-003", "a1", "C", 7),
            sp("a1-004", "a1", "C", 30, flagged=True), sp("a2-001", "a2", "A", 40)]
    by = {s.agent: s for s in standings(rows)}
    assert by["a1"].best_per_board == {"A": "a1-002", "C": "a1-003"}
    assert (by["a1"].board_points, by["a1"].penalties, by["a1"].total) == (32, 20, 12)
    assert by["a2"].total == 40
    assert [s.agent for s in standings(rows)] == ["a2", "a1"]


def test_bootstrap_is_seeded_and_paired():
    a = {"x": 1.0, "y": 0.0, "z": 0.5}
    b = {"x": 0.5, "y": 0.0, "z": 0.5, "extra": 9.0}
    assert paired_bootstrap(a, b, 500, 0.95, 1) == paired_bootstrap(a, b, 500, 0.95, 1)
    n, gain, lo, hi = paired_bootstrap(a, b, 500, 0.95, 1)
    assert n == 3 and gain == pytest.approx(1 / 6) and lo <= gain <= hi
