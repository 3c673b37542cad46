"""One review, end to end: load and refuse early (nothing written), then run the stages and write the report."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from reviewbench.arena import Arena, find_arena, load_arena
from reviewbench.bars import load_bars
from reviewbench.bundle import Bundle, load_bundle
from reviewbench.errors import BundleError, UserError
from reviewbench.findings import Finding
from reviewbench.pipeline import EarlierSubmission, StageContext, StageReport, run_stages
from reviewbench.points import SubmissionPoints
from reviewbench.report import ReviewReport, SubmissionInfo, write_report
from reviewbench.rubric import Rubric, load_rubric, resolve_rubric_path
from reviewbench.stages import STAGE_NAMES, STAGES
from reviewbench.store import Store
from reviewbench.verdict import FinalVerdict


def open_arena(bundle_dir: Path | None, arena_dir: Path | None) -> Arena:
    if arena_dir is not None:
        return load_arena(arena_dir)
    return load_arena(find_arena(bundle_dir if bundle_dir is not None else Path.cwd()))


def arena_rubric(arena: Arena) -> Rubric:
    return load_rubric(resolve_rubric_path(arena.config.panel.rubric, arena.root))


def earlier_submissions(arena: Arena, bundle: Bundle) -> tuple[list[EarlierSubmission], list[Finding]]:
    """Submissions of the same arena made before this one: by submitted_at, else by the agent's own order."""
    out: list[EarlierSubmission] = []
    findings: list[Finding] = []
    for sub_id in arena.submission_ids():
        if sub_id == bundle.id:
            continue
        try:
            other = load_bundle(arena.submit_dir / sub_id, arena.config.bundle)
        except UserError as e:
            findings.append(Finding(code="arena.unreadable_submission", severity="warning",
                                    message=f"earlier-submission check skipped {sub_id}: {e.message}",
                                    location=e.where))
            continue
        if bundle.submitted_at and other.submitted_at:
            before = other.submitted_at < bundle.submitted_at
        else:
            before = other.agent == bundle.agent and (other.seq or 0) < (bundle.seq or 0)
        if before:
            out.append(EarlierSubmission(id=other.id, agent=other.agent, board=other.board,
                                         submitted_at=other.submitted_at, short_name=other.meta.short_name,
                                         path=str(other.path)))
    if bundle.submitted_at is None:
        findings.append(Finding(code="arena.no_submission_time", severity="warning",
                                message="no submitted_at in meta: earlier submissions are only this agent's "
                                        "lower-numbered ones"))
    out.sort(key=lambda e: (e.submitted_at or datetime.min.replace(tzinfo=timezone.utc), e.id))
    return out, findings


def _headline(stages: list[StageReport]) -> str:
    judges = next(s for s in stages if s.name == "judges")
    if judges.status == "ok":
        return judges.data.get("panel_note") or judges.summary
    return (f"No judges ran ({judges.reason}). Nothing below is a judgement of quality: "
            f"only the deterministic stages that ran are reported.")


def _outcome(verdict: FinalVerdict | None, points: SubmissionPoints | None, stages: list[StageReport]) -> str:
    parts = []
    bundle = next(s for s in stages if s.name == "bundle")
    errors = [f for f in bundle.findings if f.severity == "error"]
    if errors:
        parts.append(f"BUNDLE HAS {len(errors)} ERROR(S): {errors[0].message}")
    if verdict is None:
        parts.append("no verdict")
    elif verdict.standing_flags:
        parts.append("FLAGGED " + ", ".join(f.flag for f in verdict.standing_flags))
    elif verdict.status == "no_judges":
        parts.append("no quality verdict (no judge ran)")
    else:
        parts.append(f"verdict {verdict.status}: {verdict.judge_points:g} judge points, no flags")
    if points is not None:
        parts.append(f"{points.total:g} points" + (f", agent penalty -{points.penalty:g}" if points.penalty else ""))
    return " · ".join(parts)


def review(
    bundle_dir: Path,
    arena_dir: Path | None = None,
    *,
    only: set[str] | None = None,
    skip: set[str] = frozenset(),
    rerun: set[str] = frozenset(),
    on_stage: Callable[[StageReport], None] | None = None,
) -> tuple[ReviewReport, Path]:
    for name in (only or set()) | set(skip) | set(rerun):
        if name not in STAGE_NAMES:
            raise UserError(None, f"unknown stage {name!r} (stages: {', '.join(STAGE_NAMES)})")
    arena = open_arena(bundle_dir, arena_dir)
    rubric = arena_rubric(arena)
    rubric.rule_set(arena.config.points.rule_set)  # fail early on an unknown rule set
    bundle = load_bundle(bundle_dir, arena.config.bundle)
    if not bundle.path.is_relative_to(arena.root):
        raise BundleError(bundle_dir, f"bundle is not inside the arena {arena.root}")
    board = arena.config.board(bundle.board) if bundle.board else None
    if board is not None:
        load_bars(arena.root, board.name, board.bars)  # a broken bars file is the arena's mistake: say so now
    earlier, arena_findings = earlier_submissions(arena, bundle)
    agent = arena.config.agent(bundle.agent)
    family = agent.family if agent else "other"
    bundle = bundle.model_copy(update={"findings": [*bundle.findings, *arena_findings]})

    with Store(arena.store_path) as store:
        store.upsert_submission(bundle.id, bundle.agent, bundle.board, bundle.submitted_at, bundle.content_hash,
                                bundle.path)
        run_id = store.start_run(bundle.id, bundle.content_hash)
        ctx = StageContext(arena=arena, bundle=bundle, rubric=rubric, store=store, author_family=family,
                           earlier=earlier)
        try:
            stages = run_stages(STAGES, ctx, only=only, skip=skip, rerun=rerun, on_stage=on_stage)
            verdict_data, points_data = ctx.data("verdict"), ctx.data("points")
            verdict = FinalVerdict.model_validate(verdict_data) if verdict_data else None
            points = SubmissionPoints.model_validate(points_data) if points_data else None
            report = ReviewReport(
                generated_at=datetime.now(timezone.utc).replace(microsecond=0), run_id=run_id,
                arena=arena.config.arena.name, rubric=rubric.version, headline=_headline(stages),
                outcome=_outcome(verdict, points, stages),
                submission=SubmissionInfo(id=bundle.id, agent=bundle.agent, family=family, board=bundle.board,
                                          short_name=bundle.meta.short_name, submitted_at=bundle.submitted_at,
                                          content_hash=bundle.content_hash, path=str(bundle.path)),
                verdict=verdict, points=points, stages=stages, earlier_submissions=earlier)
            out_dir = write_report(report, arena.reviews_dir)
            if points is not None:
                store.put_points(bundle.id, bundle.agent, points.board, points.model_dump(mode="json"), run_id)
        except BaseException:
            store.finish_run(run_id, "interrupted", None)
            raise
        store.finish_run(run_id, "complete", out_dir)
    return report, out_dir
