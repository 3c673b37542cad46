"""Points on a board and the leaderboard. Pure functions over measured per-item scores and verdicts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from reviewbench.rubric import FlagEffect, RuleSet

_EPS = 1e-9  # a gain of exactly +0.005 must pass a +0.005 gate despite float rounding


class BoardEntry(BaseModel):
    """Measured results of one method on a board: per-item scores normalised to the full cache."""

    id: str
    agent: str | None = None  # None for baselines
    kind: Literal["baseline", "submission"] = "submission"
    board: str
    submitted_at: datetime | None = None
    item_scores: dict[str, float] = Field(default_factory=dict)
    flagged: bool = False

    @property
    def mean(self) -> float:
        return float(np.mean(list(self.item_scores.values()))) if self.item_scores else float("nan")


class GainCI(BaseModel):
    reference: str
    n_items: int
    gain: float
    lower: float
    upper: float
    level: float
    passes: bool


class SubmissionPoints(BaseModel):
    submission: str
    agent: str
    board: str | None
    rule_set: str
    judge_points: float
    benchmark_points: float
    first_on_board_points: float
    flagged: bool
    penalty: float
    total: float  # the submission's own points (0 when flagged); the penalty is charged to the agent
    gate: GainCI | None = None
    reasons: list[str] = Field(default_factory=list)


def paired_bootstrap(
    candidate: dict[str, float], reference: dict[str, float], samples: int, level: float, seed: int
) -> tuple[int, float, float, float]:
    """Mean gain of candidate over reference on their common items, with a percentile bootstrap CI."""
    items = sorted(set(candidate) & set(reference))
    if not items:
        return 0, float("nan"), float("nan"), float("nan")
    mean, lo, hi = mean_ci([candidate[i] - reference[i] for i in items], samples, level, seed)
    return len(items), mean, lo, hi


def mean_ci(values: Sequence[float], samples: int, level: float, seed: int) -> tuple[float, float, float]:
    """The mean of ``values`` and its percentile bootstrap CI: reviewbench's one bootstrap (the gate's paired
    gain, the plots' bands). Percentile, not BCa: BCa is undefined when every item has the same score, which is
    common at tiny budgets. (``harness`` keeps its own, as it never imports reviewbench.)"""
    arr = np.asarray(values, dtype=np.float64)
    if len(arr) == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(arr), size=(samples, len(arr)))
    means = arr[idx].mean(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(arr.mean()), float(lo), float(hi)


def gain_ci(candidate: BoardEntry, reference: BoardEntry, rules: RuleSet) -> GainCI:
    n, gain, lo, hi = paired_bootstrap(candidate.item_scores, reference.item_scores,
                                       rules.bootstrap_samples, rules.ci_level, rules.bootstrap_seed)
    passes = n > 0 and lo + _EPS >= rules.min_ci_gain
    return GainCI(reference=reference.id, n_items=n, gain=gain, lower=lo, upper=hi, level=rules.ci_level,
                  passes=passes)


def board_best(entries: Sequence[BoardEntry]) -> BoardEntry | None:
    """The current best on a board: highest mean among measured, unflagged entries (baselines included)."""
    ok = [e for e in entries if e.item_scores and not e.flagged]
    return max(ok, key=lambda e: (e.mean, e.id)) if ok else None


def score_submission(
    *,
    submission: str,
    agent: str,
    board: str | None,
    judge_points: float | None,
    novelty: float | None,
    flagged: bool,
    measured: BoardEntry | None,
    earlier: Sequence[BoardEntry],
    rules: RuleSet,
    rule_set_name: str,
    flag_effect: FlagEffect,
    board_gate: GainCI | None = None,
) -> SubmissionPoints:
    """One submission's points. ``earlier`` = baselines and the submissions before it on the same board;
    ``board_gate`` = the gain over the board's best as the standing stage measured it (computed here if None)."""
    reasons: list[str] = []
    jp = judge_points or 0.0
    if judge_points is None:
        reasons.append("no judge points: no judge verdict")

    first_pts = 0.0
    earlier_subs = [e for e in earlier if e.kind == "submission"]
    if board is not None and not earlier_subs:
        if novelty is not None and novelty >= rules.first_on_board_min_novelty:
            first_pts = rules.first_on_board_points
            reasons.append(f"first submission on board {board} with novelty {novelty:g} "
                           f">= {rules.first_on_board_min_novelty:g}: +{first_pts:g}")
        else:
            shown = "unknown" if novelty is None else f"{novelty:g}"
            reasons.append(f"first submission on board {board}, but novelty {shown} "
                           f"< {rules.first_on_board_min_novelty:g}: no bonus")
    elif board is not None:
        reasons.append(f"not the first submission on board {board} ({earlier_subs[0].id} came first): no bonus")

    bench_pts, gate = 0.0, None
    if measured is None or not measured.item_scores:
        reasons.append("no benchmark points: no measured results for this submission")
    else:
        best = board_best(earlier)
        if best is None:
            reasons.append("no benchmark points: the board has no measured reference to beat")
        else:
            gate = board_gate if board_gate is not None else gain_ci(measured, best, rules)
            if gate.passes:
                bench_pts = rules.benchmark_points
                reasons.append(f"beats board best {best.id}: gain {gate.gain:+.4f}, CI lower {gate.lower:+.4f} "
                               f">= {rules.min_ci_gain:+.4f}: +{bench_pts:g}")
            else:
                reasons.append(f"does not beat board best {best.id}: CI lower {gate.lower:+.4f} "
                               f"< {rules.min_ci_gain:+.4f}")
                own = [e for e in earlier if e.kind == "submission" and e.agent == agent]
                own_best = board_best(own) if rules.own_best_pays else None
                if own_best is not None:
                    own_gate = gain_ci(measured, own_best, rules)
                    if own_gate.passes:
                        bench_pts, gate = rules.benchmark_points, own_gate
                        reasons.append(f"improves on own best {own_best.id}: CI lower {own_gate.lower:+.4f}: "
                                       f"+{bench_pts:g} (rule set {rule_set_name})")

    total = jp + bench_pts + first_pts
    penalty = 0.0
    if flagged:
        penalty = flag_effect.penalty_points
        if flag_effect.zero_submission:
            reasons.append(f"standing flag: submission zeroed (was {total:g}) and the agent loses {penalty:g}")
            total = 0.0
        else:
            reasons.append(f"standing flag: the agent loses {penalty:g}")
    return SubmissionPoints(submission=submission, agent=agent, board=board, rule_set=rule_set_name,
                            judge_points=jp, benchmark_points=bench_pts, first_on_board_points=first_pts,
                            flagged=flagged, penalty=penalty, total=round(total, 2), gate=gate, reasons=reasons)


class AgentStanding(BaseModel):
    agent: str
    best_per_board: dict[str, str]  # board -> submission id counted
    board_points: float
    penalties: float
    total: float


def standings(points: Sequence[SubmissionPoints]) -> list[AgentStanding]:
    """An agent's total counts its single best submission per board, minus every flag penalty it incurred."""
    by_agent: dict[str, list[SubmissionPoints]] = {}
    for p in points:
        by_agent.setdefault(p.agent, []).append(p)
    out = []
    for agent, subs in by_agent.items():
        best: dict[str, SubmissionPoints] = {}
        for p in subs:
            key = p.board or "(no board)"
            if key not in best or p.total > best[key].total:
                best[key] = p
        board_points = sum(p.total for p in best.values())
        penalties = sum(p.penalty for p in subs)
        out.append(AgentStanding(agent=agent, best_per_board={b: p.submission for b, p in sorted(best.items())},
                                 board_points=round(board_points, 2), penalties=penalties,
                                 total=round(board_points - penalties, 2)))
    return sorted(out, key=lambda s: (-s.total, s.agent))
