"""The Overall score (accuracy + efficiency vs the full cache), its weights and limits, and the evidence judge's
mapping of measured facts onto the rubric's anchors. Pure functions on hand-built rows and facts."""

from __future__ import annotations

import pytest

from harness.results import Row
from reviewbench.arena import ArenaConfig
from reviewbench.evidence.facts import (BoardFact, BudgetGain, CitationFact, EvidenceFacts, LedgerFact,
                                        SimilarityFact)
from reviewbench.evidence.judge import effectiveness, judge, novelty, soundness
from reviewbench.overall import DECODE_WEIGHTS, OverallWeights, WeightLimits, measure

W = 500_000_000  # weight bytes


def full(item: str, score: float = 1.0, peak: int = 1000, mean: float = 1000.0, gen: int = 10,
         task: str = "niah_single") -> Row:
    return Row(item=item, task=task, question=0, method="full", budget=1.0, score=score, kl=0.0, top1=1.0,
               kv_bytes_peak=peak, kv_bytes_decode_mean=mean, model_cpu_s=2.0, compress_cpu_s=0.0,
               generated_tokens=gen)


def mine(item: str, budget: float, score: float, peak: int = 100, mean: float = 100.0, cpu: float = 0.2,
         gen: int = 10, error: str | None = None, task: str = "niah_single") -> Row:
    return Row(item=item, task=task, question=0, method="m", budget=budget, score=None if error else score,
               top1=0.5, kv_bytes_peak=peak, kv_bytes_decode_mean=mean, model_cpu_s=2.0, compress_cpu_s=cpu,
               generated_tokens=gen, error=error)


def test_components_against_the_full_cache():
    w = OverallWeights(accuracy=0.7, memory=0.1, speed=0.1, overhead=0.1)
    rows = [mine("a", 0.1, 1.0, peak=100, mean=100, cpu=0.2), mine("b", 0.1, 0.0, peak=100, mean=100, cpu=0.2)]
    m = measure("m", rows, [full("a"), full("b", score=1.0)], w, param_bytes=W, budgets=[0.1])
    c = m.components
    assert c.accuracy == pytest.approx(0.5)  # one of two right, the full cache both
    assert c.memory == pytest.approx(0.9)  # 100 of 1000 bytes held
    assert c.speed == pytest.approx(1 - (W + 100) / (W + 1000))  # memory-bound decode cost model
    assert c.overhead == pytest.approx(0.9)  # 0.2 CPU s against 2.0 s of model work
    assert m.item_overall == {"niah_single/a": pytest.approx(0.7 + 0.09 + 0.1 * c.speed + 0.09),
                              "niah_single/b": pytest.approx(0.09 + 0.1 * c.speed + 0.09)}
    assert m.overall == pytest.approx(sum(m.item_overall.values()) / 2)
    assert m.accuracy_basis == "task accuracy"


def test_a_failed_budget_scores_zero_and_says_why():
    rows = [mine("a", 0.1, 1.0), mine("a", 0.5, 0.0, error="layer 3: index out of range")]
    m = measure("m", rows, [full("a")], OverallWeights(), W, budgets=[0.1, 0.5])
    assert m.per_budget[1].errors == 1 and m.per_budget[1].overall == 0.0
    assert m.errors == ["layer 3: index out of range"]
    assert m.item_overall["niah_single/a"] == pytest.approx(m.per_budget[0].overall / 2)


def test_accuracy_normalises_per_task_and_falls_back_to_agreement_without_a_metric():
    rows = [mine("a", 0.1, 0.5), mine("t", 0.1, 0.0, task="trace")]
    fulls = [full("a", score=0.5), Row(item="t", task="trace", question=0, method="full", budget=0, top1=1.0,
                                       kv_bytes_peak=1000, kv_bytes_decode_mean=1000, model_cpu_s=2.0)]
    rows[1] = Row(item="t", task="trace", question=0, method="m", budget=0.1, top1=0.8, kv_bytes_peak=100,
                  kv_bytes_decode_mean=100, model_cpu_s=2.0, compress_cpu_s=0.0)
    m = measure("m", rows, fulls, OverallWeights(accuracy=1.0, memory=0, speed=0, overhead=0), W, [0.1])
    assert m.item_overall["niah_single/a"] == pytest.approx(1.0)  # 0.5 of a task the full cache scores 0.5 on
    assert m.item_overall["trace/t"] == pytest.approx(0.8) and m.accuracy_basis == "mixed"


def test_longer_generation_costs_on_free_generation_only():
    rows = [mine("a", 2048, 1.0, gen=20)]
    w = DECODE_WEIGHTS
    free = measure("m", rows, [full("a", gen=10)], w, W, [2048], free_generation=True)
    forced = measure("m", rows, [full("a", gen=10)], w, W, [2048], free_generation=False)
    assert free.components.length == pytest.approx(0.5) and forced.components.length == 1.0


def test_the_same_rows_give_the_same_overall():
    rows = [mine(f"i{k}", b, k % 2, cpu=0.1 * k) for k in range(5) for b in (0.1, 0.5)]
    fulls = [full(f"i{k}") for k in range(5)]
    a = measure("m", rows, fulls, OverallWeights(), W, [0.1, 0.5])
    assert a == measure("m", list(reversed(rows)), fulls, OverallWeights(), W, [0.1, 0.5])


def test_weights_sum_to_one_and_respect_the_arena_limits():
    with pytest.raises(ValueError, match="sum to 1"):
        OverallWeights(accuracy=0.7, memory=0.1, speed=0.1, overhead=0.2)
    limits = WeightLimits()
    assert limits.check(OverallWeights(accuracy=0.55, memory=0.2, speed=0.1, overhead=0.15), decode=False)
    assert limits.check(OverallWeights(accuracy=0.55, memory=0.2, speed=0.1, overhead=0.15), decode=True) is None
    assert "memory + speed" in (limits.check(OverallWeights(accuracy=0.8, memory=0.05, speed=0.05, overhead=0.1),
                                             decode=False) or "")
    with pytest.raises(ValueError, match="board A: accuracy weight 0.5"):
        ArenaConfig.model_validate({"boards": [{"name": "A", "budgets": [0.1], "weights": {
            "accuracy": 0.5, "memory": 0.2, "speed": 0.2, "overhead": 0.1}}]})
    loose = ArenaConfig.model_validate({"overall": {"min_accuracy": 0.5}, "boards": [{"name": "A", "budgets": [0.1],
                                        "weights": {"accuracy": 0.5, "memory": 0.2, "speed": 0.2, "overhead": 0.1}}]})
    assert loose.boards[0].overall_weights.accuracy == 0.5


# --- the evidence judge -----------------------------------------------------------------------------------------------
def sim(ref: str, via: str, score: float, containment: float | None = None, credited: bool = False) -> SimilarityFact:
    return SimilarityFact(reference=ref, implements=ref.split(":")[1] if ref.startswith("baseline:") else None,
                          via=via, score=score, containment=containment, credited=credited, credit_reason="")


@pytest.mark.parametrize("behaviour, code, level", [
    (0.95, 0.1, 0), (0.3, 0.65, 0), (0.3, 0.2, 3), (0.8, 0.1, 1), (0.3, 0.45, 1), (0.6, 0.1, 2), (0.1, 0.3, 2),
])
def test_novelty_follows_the_distance_to_the_nearest_reference(rubric, behaviour, code, level):
    facts = EvidenceFacts(behaviour=[sim("baseline:snapkv", "behaviour", behaviour)],
                          code=[sim("baseline:tova", "code", code, containment=0.1)], behaviour_measured=True)
    assert novelty(facts, rubric).score == level


def test_novelty_is_capped_at_what_distance_can_show(rubric):
    s = novelty(EvidenceFacts(), rubric)
    assert s.score == rubric.evidence.novelty_max == 3 and "need a judge who reads" in s.rationale


def _board(overall: float, gains: list[tuple[float, float, float]], best: float = 0.8, random: float = 0.3,
           weakest: float = 0.5, n_items: int = 4) -> BoardFact:
    from reviewbench.overall import BoardMeasurement, Components

    m = BoardMeasurement(method="m", overall=overall, components=Components(accuracy=1, memory=0, speed=0,
                                                                             overhead=1, length=1),
                         weights=OverallWeights(), item_overall={}, per_budget=[], accuracy_basis="task accuracy",
                         n_items=n_items, errors=[])
    return BoardFact(measurement=m, best_id="baseline:snapkv", best_overall=best, random_overall=random,
                     weakest_overall=weakest, margin=0.005,
                     gains=[BudgetGain(budget=b, gain=g, lower=g - 0.05 * 0 - lo, upper=g + lo) for b, g, lo in gains])


@pytest.mark.parametrize("board, level", [
    (None, 0),
    (_board(0.25, []), 0),
    (_board(0.4, []), 1),
    (_board(0.6, [(0.1, -0.2, 0.05), (0.5, -0.1, 0.05)]), 2),
    (_board(0.78, [(0.1, -0.2, 0.05), (0.5, -0.01, 0.02)], n_items=40), 3),  # on par: a narrow CI over 40 items
    (_board(0.78, [(0.1, -0.2, 0.05), (0.5, -0.01, 0.05)]), 2),  # 4 items: too few to tell (issue 23)
    (_board(0.78, [(0.1, -0.2, 0.05), (0.5, -0.01, 0.05)], n_items=40), 2),  # a CI of +-0.05: too wide to say
    (_board(0.85, [(0.1, 0.1, 0.05), (0.5, -0.01, 0.05)]), 4),
    (_board(0.9, [(0.1, 0.1, 0.05), (0.5, 0.08, 0.05)]), 5),
])
def test_effectiveness_follows_the_measurement_against_the_board(board, level):
    facts = EvidenceFacts(board=board, board_reason="the bundle names no board")
    assert effectiveness(facts).score == level


@pytest.mark.parametrize("ledger, citations, missing, level", [
    (LedgerFact(contradicted=1, contradicted_every_seed=1), CitationFact(), [], 0),
    (LedgerFact(), CitationFact(not_found=1), [], 0),
    (LedgerFact(contradicted=1), CitationFact(), [], 1),
    (LedgerFact(reproduced=2), CitationFact(real=2), ["Limitations"], 1),
    (LedgerFact(unverifiable=1), CitationFact(real=1), [], 2),
    (LedgerFact(reproduced=2), CitationFact(real=1), [], 3),
])
def test_soundness_follows_the_ledger_and_the_citations(ledger, citations, missing, level):
    facts = EvidenceFacts(ledger=ledger, citations=citations, sections_missing=missing)
    assert soundness(facts).score == level


def test_the_evidence_judge_names_the_nearest_paper_first(rubric):
    facts = EvidenceFacts(behaviour=[sim("baseline:tova", "behaviour", 1.0)],
                          code=[sim("baseline:snapkv", "code", 0.2, containment=0.1)], behaviour_measured=True)
    v = judge(facts, rubric)
    assert v.scores["novelty"].score == 0 and v.prior_work[0].arxiv_id == "2401.06104"  # TOVA
    assert set(v.scores) == {c.id for c in rubric.criteria}


def test_the_evidence_judge_never_replays_the_verdict_of_other_facts(rubric, monkeypatch, tmp_path):
    """Its prompt is the same for every submission without prose shown; the cache key must carry the facts (and the
    provider's version), else a rerun replays a stale verdict — found when a calibration rerun scored K-norm's
    exact copy novelty 3 from an older run's cached call."""
    import asyncio

    from reviewbench.arena import JudgeSpec
    from reviewbench.judges.inputs import build_inputs
    from reviewbench.judges.panel import PanelRunner
    from reviewbench.judges.providers.evidence import EvidenceJudge
    from reviewbench.store import Store

    monkeypatch.setenv("REVIEWBENCH_CACHE", str(tmp_path / "user-cache"))
    spec = JudgeSpec(family="evidence", provider="evidence", model="measured-facts", web_search=False)

    def run(facts: EvidenceFacts, store: Store):
        inputs = build_inputs(submission_id="s", board="A", board_setting="", method_src="x = 1\n", description="",
                              audit_summary="", audit_findings=[], evidence_lines=[], earlier=[], log_dir=None)
        inputs = inputs.model_copy(update={"facts": facts})
        runner = PanelRunner(inputs=inputs, rubric=rubric, author_family="anthropic", store=store,
                             make_provider=lambda s, i: EvidenceJudge(i), make_web=lambda: None)
        return asyncio.run(runner._run_one(runner.task(spec, "primary", "evidence")))

    far = EvidenceFacts(behaviour=[sim("baseline:snapkv", "behaviour", 0.1)], behaviour_measured=True)
    same = EvidenceFacts(behaviour=[sim("baseline:knorm", "behaviour", 1.0)], behaviour_measured=True)
    with Store(tmp_path / "reviews" / "reviewbench.sqlite") as store:
        a = run(far, store)
        b = run(same, store)
        again = run(same, store)
    assert a.verdict and b.verdict and again.verdict
    assert a.verdict.scores["novelty"].score == 3 and b.verdict.scores["novelty"].score == 0 and not b.cached
    assert again.cached and again.verdict.scores["novelty"].score == 0
