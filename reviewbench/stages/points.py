"""The points stage: the submission's points (``reviewbench.points``) from the verdict and the board standing: the
judge points, the benchmark points when its Overall beats the board's best before it by the CI gate, the
first-on-board bonus, the flag penalty.

It reads the board only through the standing stage's output (hashed like any stage's), so it is cached: the
points rerun when the verdict or the board before the submission changed, never on a stale board.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from reviewbench.overall import BoardMeasurement, BoardStanding
from reviewbench.pipeline import Stage, StageContext, StageKey, StageOutput, config_tables
from reviewbench.points import BoardEntry, SubmissionPoints, score_submission
from reviewbench.stages.standing import STANDING
from reviewbench.stages.verdict import VERDICT


class PointsData(SubmissionPoints):
    """The submission's points, and the board measurement they were decided on."""

    model_config = ConfigDict(extra="forbid")

    measurement: BoardMeasurement | None = None
    best_before: BoardStanding | None = None
    # every entry it was compared with: id -> budget (as written) -> Overall at that budget (the report's plot)
    compared: dict[str, dict[str, float]] = Field(default_factory=dict)


POINTS = StageKey("points", PointsData)


def points_stage(ctx: StageContext) -> StageOutput[PointsData]:
    verdict = ctx.get(VERDICT)
    if verdict is None:
        return StageOutput(status="not_run", reason="needs the verdict stage")
    b = ctx.bundle
    board = ctx.arena.config.board(b.board) if b.board else None
    standing = ctx.get(STANDING)
    if board is not None and standing is None:
        why = ctx.report(STANDING)
        return StageOutput(status="not_run", reason="needs the board standing (standing stage: "
                                                    f"{why.reason if why is not None and why.reason else 'not run'})")
    measurement = standing.measurement if standing is not None else None
    measured = BoardEntry(id=b.id, agent=b.agent, kind="submission", board=board.name, submitted_at=b.submitted_at,
                          item_scores=measurement.item_overall) if board is not None and measurement is not None \
        else None
    earlier = standing.board_entries() if standing is not None else []
    rs_name, rules = ctx.rubric.rule_set(ctx.arena.config.points.rule_set)
    pts = score_submission(
        submission=b.id, agent=b.agent, board=board.name if board else None, judge_points=verdict.judge_points,
        novelty=verdict.scores.get("novelty"), flagged=bool(verdict.standing_flags), measured=measured,
        earlier=earlier, rules=rules, rule_set_name=rs_name, flag_effect=ctx.rubric.flag_effect,
        board_gate=standing.gate if standing is not None else None)
    best = standing.best_entry() if standing is not None else None
    if board is None:
        pts.reasons.insert(0, "no valid board: no board points")
    else:
        if best is not None:
            pts.reasons.append(f"board {board.name}'s best before this submission: {best.id} (Overall {best.mean:.4f} "
                               f"over {len(best.item_scores)} test items)")
        if standing is not None:
            pts.reasons += standing.notes
    compared = {e.id: e.per_budget for e in standing.entries} if standing is not None else {}
    data = PointsData(**pts.model_dump(), measurement=measurement,
                      best_before=standing.best if standing is not None and best is not None else None,
                      compared=compared)
    summary = f"{pts.total:g} points" + (f" (agent penalty -{pts.penalty:g})" if pts.penalty else "")
    if measurement is not None:
        g = pts.gate
        gate = (f" (gain {g.gain:+.4f}, {g.level:.0%} CI [{g.lower:+.4f}, {g.upper:+.4f}] over {g.n_items} item{'s' if g.n_items != 1 else ''}: "
                + ("passes" if g.passes else "does not pass") + ")") if g is not None else ""
        summary = f"Overall {measurement.overall:.4f}" + (f" vs best before {best.mean:.4f}" if best else "") + \
                  f"{gate}; {summary}"
    return StageOutput(status="ok", summary=summary, data=data)


STAGE = Stage(POINTS, "Points", (VERDICT, STANDING), points_stage, config_inputs=config_tables("boards", "points"),
              code=("reviewbench.points",))
