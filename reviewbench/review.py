"""One review, end to end: load and refuse early (nothing written), then run the stages and write the report.

A review with every stage is *complete*: its verdict, measurement and points become the submission's entry in
the store (``complete_reviews``), which boards, points and the leaderboard are made of. A review with
``--only``/``--skip`` is *partial*: stored and written as a draft beside the last complete report, never
replacing it in the leaderboard or the points.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from reviewbench.arena import Arena, find_arena, load_arena
from reviewbench.bundle import Bundle, load_submission
from reviewbench.errors import BundleError, ConfigError, UserError
from reviewbench.executor import Executor, executor_for
from reviewbench.findings import Finding
from reviewbench.pipeline import EarlierSubmission, Stage, StageContext, StageReport, run_stages
from reviewbench.rubric import Rubric, load_rubric, resolve_rubric_path
from reviewbench.stagelist import STAGE_NAMES, canonical, check_stage, stage_names
from reviewbench.store import ReviewRecord, Store

if TYPE_CHECKING:
    from reviewbench.report import ReviewReport


def open_arena(bundle_dir: Path | None, arena_dir: Path | None) -> Arena:
    if arena_dir is not None:
        return load_arena(arena_dir)
    return load_arena(find_arena(bundle_dir if bundle_dir is not None else Path.cwd()))


def arena_rubric(arena: Arena) -> Rubric:
    try:
        return load_rubric(resolve_rubric_path(arena.config.panel.rubric, arena.root))
    except ConfigError as e:
        if e.where is None:  # the rubric named by arena.toml is not found: arena.toml is where to fix it
            raise ConfigError(arena.root / "arena.toml", f"[panel] rubric: {e.message}") from None
        raise


def earlier_submissions(arena: Arena, bundle: Bundle) -> tuple[list[EarlierSubmission], list[Finding]]:
    """Submissions of the same arena made before this one: by submitted_at, else by the agent's own order.
    One unreadable submission is a warning here, never the end of this review."""
    out: list[EarlierSubmission] = []
    findings: list[Finding] = []
    for sub_id in arena.submission_ids():
        if sub_id == bundle.id:
            continue
        try:
            other = load_submission(arena, arena.submit_dir / sub_id)
        except UserError as e:
            findings.append(Finding(code="arena.unreadable_submission", severity="warning",
                                    message=f"earlier-submission check skipped {sub_id}: {e.message}",
                                    location=e.where))
            continue
        except (RecursionError, MemoryError, OSError, ValueError) as e:
            findings.append(Finding(code="arena.unreadable_submission", severity="warning",
                                    message=f"earlier-submission check skipped {sub_id}: {type(e).__name__}",
                                    location=str(arena.submit_dir / sub_id)))
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


ReviewContext = StageContext  # what a review's stages share: the arena, the bundle, the store, the executor


def open_review(arena: Arena, bundle_dir: Path | Bundle, executor: Executor | None = None, *, store: Store,
                progress: Callable[[str], None] | None = None, fresh_judges: bool = False,
                history: bool = True) -> ReviewContext:
    """The one way a review is set up — the single review, ``review arena run`` (its stages run ahead and its
    full review) and calibration all come here — so the same submission gets the same context, hence the same
    input hashes and the same stored results, whichever command reviews it.

    ``executor``: where its harness runs go (default: ``[harness] executor`` of arena.toml); it travels on the
    context, nothing process-wide is set. ``history=False`` (a calibration case, on no board): no earlier
    submissions and no findings about them."""
    bundle = bundle_dir if isinstance(bundle_dir, Bundle) else load_submission(arena, bundle_dir)
    earlier: list[EarlierSubmission] = []
    if history:
        earlier, arena_findings = earlier_submissions(arena, bundle)
        bundle = bundle.model_copy(update={"findings": [*bundle.findings, *arena_findings]})
    agent = arena.config.agent(bundle.agent)
    if executor is None:
        executor = executor_for(arena.config.harness, config_file=arena.root / "arena.toml")
    return StageContext(arena=arena, bundle=bundle, rubric=arena_rubric(arena), store=store,
                        author_family=agent.family if agent else "other", earlier=earlier, progress=progress,
                        fresh_judges=fresh_judges, executor=executor)


class Reviewed(NamedTuple):
    """What :func:`review` returns (unpacks as ``report, out_dir``)."""

    report: "ReviewReport"
    out_dir: Path


def _check_selection(only: set[str] | None, skip: set[str], rerun: set[str]) -> None:
    for name in (only or set()) | set(skip) | set(rerun):
        if not check_stage(name):
            raise UserError(None, f"unknown stage {name!r} (stages: {', '.join(stage_names())})")


def review(
    bundle_dir: Path,
    arena_dir: Path | None = None,
    *,
    only: set[str] | None = None,
    skip: set[str] | frozenset[str] = frozenset(),
    rerun: set[str] | frozenset[str] = frozenset(),
    on_stage: Callable[[StageReport[Any]], None] | None = None,
    on_start: Callable[[Stage[Any]], None] | None = None,
    progress: Callable[[str], None] | None = None,
    stages: tuple[Stage[Any], ...] | None = None,
    fresh_judges: bool = False,
    executor: Executor | None = None,
    on_ready: Callable[[Bundle], None] | None = None,
) -> Reviewed:
    """Review one bundle; returns the report and the folder it was written to. Refuses (a :class:`UserError`,
    nothing written) a bundle, arena, panel, rubric, bars file or test split that cannot be used. ``on_ready``
    is called once all of that is validated, before anything is written (the CLI's "Reviewing ..." line)."""
    from reviewbench.report import build_report, write_report
    from reviewbench.stages import STAGES

    only = {canonical(n) for n in only} if only is not None else None
    skip, rerun = {canonical(n) for n in skip}, {canonical(n) for n in rerun}
    _check_selection(only, skip, rerun)
    arena = open_arena(bundle_dir, arena_dir)
    from reviewbench.judges.panel import check_panel

    check_panel(arena.config.panel, arena.root / "arena.toml")
    rubric = arena_rubric(arena)
    rubric.rule_set(arena.config.points.rule_set)  # fail early on an unknown rule set
    bundle = load_submission(arena, bundle_dir)
    if not bundle.path.is_relative_to(arena.root):
        raise BundleError(bundle_dir, f"bundle is not inside the arena {arena.root}")
    board = arena.config.board(bundle.board) if bundle.board else None
    partial = only is not None or bool(skip)
    if board is not None:
        from reviewbench.bars import load_bars

        load_bars(arena, board)  # a broken bars file is the arena's mistake: say so now
        if "benchmark" in (only or set(STAGE_NAMES)) and "benchmark" not in skip:
            from reviewbench.benchmark import split_manifest

            split_manifest(arena, board)  # a missing test split too

    if executor is None:  # chosen before anything is written: an unreachable Ray cluster refuses the review
        executor = executor_for(arena.config.harness, config_file=arena.root / "arena.toml")
    if on_ready is not None:  # everything validated: the CLI says "Reviewing ..." only now
        on_ready(bundle)
    with Store(arena.store_path) as store:
        ctx = open_review(arena, bundle, executor, store=store, progress=progress, fresh_judges=fresh_judges)
        bundle, family, earlier = ctx.bundle, ctx.author_family, ctx.earlier
        store.upsert_submission(bundle.id, bundle.agent, bundle.board, bundle.submitted_at, bundle.content_hash,
                                bundle.path)
        run_id = store.start_run(bundle.id, bundle.content_hash, partial=partial)
        try:
            reports = run_stages(stages or STAGES, ctx, only=only, skip=skip, rerun=rerun, on_stage=on_stage,
                                 on_start=on_start)
            report = build_report(arena, bundle, family, rubric, run_id, reports, earlier, partial)
            out_dir = write_report(report, arena.reviews_dir)
            if not partial:
                store.put_complete(_record(bundle, run_id, report))
        except BaseException:
            store.finish_run(run_id, "interrupted", None)
            raise
        store.finish_run(run_id, "partial" if partial else "complete", out_dir)
    return Reviewed(report, out_dir)


def _record(bundle: Bundle, run_id: int, report: Any) -> ReviewRecord:
    from reviewbench.stages.benchmark import BenchmarkData

    verdict, points = report.verdict, report.points
    bench = report.stage("benchmark")
    data = bench.data if bench is not None and bench.status == "ok" else None
    return ReviewRecord(
        submission_id=bundle.id, agent=bundle.agent, board=bundle.board, submitted_at=bundle.submitted_at,
        run_id=run_id, flagged=bool(verdict and verdict.standing_flags),
        flags=sorted({f.flag for f in verdict.standing_flags}) if verdict else [],
        scores=dict(verdict.scores) if verdict else {}, outcome=report.outcome,
        benchmark=data.model_dump_json() if isinstance(data, BenchmarkData) else None,
        points=points.model_dump_json() if points is not None else None)
