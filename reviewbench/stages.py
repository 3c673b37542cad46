"""The stages of a review, registered in one place, in the order data flows:
bundle -> audit -> benchmark -> evidence -> harness verification -> judges -> verdict -> points (the report
follows). Each stage's output model and the stages it reads are declared here (``reviewbench.contracts``).

A stage that cannot run here says so with its reason (status ``not_run``); it is never skipped silently
and never produces invented results.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from reviewbench.benchmark import benchmark_config, benchmark_inputs, benchmark_stage, benchmark_submission
from reviewbench.contracts import (AUDIT, BENCHMARK, BUNDLE, EVIDENCE, HARNESS, JUDGES, POINTS, VERDICT, AuditData,
                                   BundleData, PointsData, VerdictData)
from reviewbench.description import SECTION_TITLES
from reviewbench.evidence.ledger_stage import ledger_stage
from reviewbench.evidence.stage import evidence_stage
from reviewbench.findings import Finding
from reviewbench.flags.rule_violation import rule_violation_flags
from reviewbench.judges.stage import board_inputs, family_offsets, judges_stage, panel_inputs
from reviewbench.leaderboard import board_standing, own_measurement
from reviewbench.logs.arena_audit import audit_agent
from reviewbench.pipeline import Stage, StageContext, StageOutput
from reviewbench.points import BoardEntry, score_submission
from reviewbench.verdict import FlagClaim, decide


def bundle_stage(ctx: StageContext) -> StageOutput[BundleData]:
    b = ctx.bundle
    cls = b.method.candidate
    present = [SECTION_TITLES[k] for k in SECTION_TITLES if k in b.description.sections]
    data = BundleData(
        id=b.id, agent=b.agent, board=b.board, content_hash=b.content_hash, files=b.files, meta=b.meta,
        sections_present=present,
        sections_missing=[t for k, t in SECTION_TITLES.items() if k not in b.description.sections],
        method_class=cls, imports=b.method.imports, claims=b.claims,
        board_known=b.board is None or ctx.arena.config.board(b.board) is not None)
    findings = list(b.findings)
    if b.board is not None and ctx.arena.config.board(b.board) is None:
        findings.append(Finding(code="bundle.unknown_board", severity="error",
                                message=f"board {b.board!r} is not declared in arena.toml"))
    if ctx.arena.config.agent(b.agent) is None:
        findings.append(Finding(code="bundle.unknown_agent", severity="warning",
                                message=f"agent {b.agent!r} is not declared in arena.toml; family unknown"))
    summary = (f"{len(b.files)} files, class {cls.name if cls else '(none)'}, "
               f"{len(present)}/{len(SECTION_TITLES)} description sections, {len(b.claims)} machine-readable claims")
    return StageOutput(status="ok", summary=summary, findings=findings, data=data)


def _tree_fingerprint(folder: Path) -> list[tuple[str, int, int]]:
    if not folder.is_dir():
        return []
    return sorted((str(p.relative_to(folder)), st.st_size, st.st_mtime_ns)
                  for p in folder.rglob("*") if p.is_file() for st in [p.stat()])


def audit_inputs(ctx: StageContext) -> list[Any]:
    """The agent's log files and every submission's metadata (the quota counts them)."""
    return [_tree_fingerprint(ctx.arena.agent_logs(ctx.bundle.agent)),
            [x for x in _tree_fingerprint(ctx.arena.submit_dir) if x[0].endswith(("meta.toml", "meta.json"))]]


def _parse_time(text: str) -> datetime | None:
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def submission_window(ctx: StageContext) -> tuple[datetime | None, datetime | None]:
    """A submission answers for what its agent did after its previous submission, up to its own."""
    end = ctx.bundle.submitted_at
    prev = [e.submitted_at for e in ctx.earlier if e.agent == ctx.bundle.agent and e.submitted_at]
    return (max(prev) if prev else None), end


def audit_stage(ctx: StageContext) -> StageOutput[AuditData]:
    agent = ctx.bundle.agent
    report = audit_agent(ctx.arena, agent)
    if report is None:
        return StageOutput(status="not_run", reason=f"no logs for {agent}: {ctx.arena.agent_logs(agent)} is missing")
    root = f"{ctx.arena.root}/"
    report.findings = [f.model_copy(update={"source": f.source.removeprefix(root)}) for f in report.findings]
    start, end = submission_window(ctx)
    in_window, findings = [], []
    for f in report.findings:
        when = _parse_time(f.time) if f.time else None
        inside = when is None or ((start is None or when > start) and (end is None or when <= end))
        note = "" if inside else (" (after this submission)" if end and when and when > end
                                  else " (before the previous submission: counted there)")
        if inside:
            in_window.append(f)
        sev = ("error" if f.severity == "violation" else "warning") if inside else "info"
        findings.append(Finding(code=f"audit.{f.category}", severity=sev, message=f"{f.rule}{note}: {f.evidence}",
                                location=f.source))
    for spot in report.blind_spots:  # what the audit could not see is part of what it reports
        findings.append(Finding(code=f"audit.blind_spot.{spot.kind}", severity="warning" if spot.strict else "info",
                                message=spot.message, location=spot.sources[0].removeprefix(root) if spot.sources
                                else None))
    flags = rule_violation_flags(in_window, agent)
    st = report.stats
    n_viol = sum(1 for f in in_window if f.severity == "violation")
    window = (f"since {start:%Y-%m-%d %H:%M}" if start else "up to") + (f" until {end:%Y-%m-%d %H:%M}" if end else "")
    summary = (f"{st.events} tool calls and connections in {st.files} files ({st.parse_warnings} parse warnings); "
               f"{n_viol} violations and {len(in_window) - n_viol} warnings {window.strip()} (the window this "
               f"submission answers for), {len(report.findings) - len(in_window)} outside it")
    return StageOutput(status="ok", summary=summary, findings=findings,
                       data=AuditData(report=report, window_start=start, window_end=end, in_window=len(in_window),
                                      candidate_flags=flags))


def candidate_flags(ctx: StageContext) -> list[FlagClaim]:
    """Machine-raised flags of the deterministic stages, for the verdict."""
    flags: list[FlagClaim] = []
    audit, evidence, ledger = ctx.get(AUDIT), ctx.get(EVIDENCE), ctx.get(HARNESS)
    for d in (audit, evidence, ledger):
        if d is not None:
            flags += d.candidate_flags
    return flags


def verdict_stage(ctx: StageContext) -> StageOutput[VerdictData]:
    judges = ctx.get(JUDGES)
    verdicts = judges.verdicts if judges else []
    final = decide(verdicts, ctx.rubric, ctx.author_family, candidate_flags(ctx),
                   corpus=judges.corpus if judges else None, family_offsets=family_offsets(ctx))
    bundle = ctx.report(BUNDLE)
    errors = [f for f in bundle.findings if f.severity == "error"] if bundle is not None else []
    if final.status == "no_judges":
        summary = "no verdict on quality: no judge ran"
    else:
        scores = ", ".join(f"{k} {v:g}" for k, v in final.scores.items() if v is not None)
        summary = f"{final.status}: {scores}; judge points {final.judge_points:g}"
    if final.standing_flags:
        summary += "; flags: " + ", ".join(f.flag for f in final.standing_flags)
    return StageOutput(status="ok", summary=summary,
                       data=VerdictData(**final.model_dump(), bundle_errors=errors))


def points_stage(ctx: StageContext) -> StageOutput[PointsData]:
    verdict = ctx.get(VERDICT)
    if verdict is None:
        return StageOutput(status="not_run", reason="needs the verdict stage")
    b = ctx.bundle
    board = ctx.arena.config.board(b.board) if b.board else None
    bench = ctx.get(BENCHMARK)
    measurement = prior = None
    if board is not None:
        prior = board_standing(ctx, board, bench.split_hash if bench else None)
    measured = None
    if board is not None and bench is not None:
        measurement = own_measurement(ctx, board, bench)
        measured = BoardEntry(id=b.id, agent=b.agent, kind="submission", board=board.name,
                              submitted_at=b.submitted_at, item_scores=measurement.item_overall)
    rs_name, rules = ctx.rubric.rule_set(ctx.arena.config.points.rule_set)
    pts = score_submission(
        submission=b.id, agent=b.agent, board=board.name if board else None, judge_points=verdict.judge_points,
        novelty=verdict.scores.get("novelty"), flagged=bool(verdict.standing_flags), measured=measured,
        earlier=prior.entries if prior else [], rules=rules, rule_set_name=rs_name, flag_effect=ctx.rubric.flag_effect)
    best = prior.best() if prior else None
    if board is None:
        pts.reasons.insert(0, "no valid board: no board points")
    else:
        if best is not None:
            pts.reasons.append(f"board {board.name}'s best before this submission: {best.id} (Overall {best.mean:.4f} "
                               f"over {len(best.item_scores)} test items)")
        if prior is not None:
            pts.reasons += prior.notes
    compared = {k: {f"{b.budget:g}": round(b.overall, 4) for b in m.per_budget}
                for k, m in (prior.measurements.items() if prior else [])}
    data = PointsData(**pts.model_dump(), measurement=measurement,
                      best_before=prior.standing(best) if prior and best else None, compared=compared)
    summary = f"{pts.total:g} points" + (f" (agent penalty -{pts.penalty:g})" if pts.penalty else "")
    if measurement is not None:
        g = pts.gate
        gate = (f" (gain {g.gain:+.4f}, {g.level:.0%} CI [{g.lower:+.4f}, {g.upper:+.4f}] over {g.n_items} item{'s' if g.n_items != 1 else ''}: "
                + ("passes" if g.passes else "does not pass") + ")") if g is not None else ""
        summary = f"Overall {measurement.overall:.4f}" + (f" vs best before {best.mean:.4f}" if best else "") + \
                  f"{gate}; {summary}"
    return StageOutput(status="ok", summary=summary, data=data)


def _config(*tables: str) -> Any:
    """The tables of arena.toml a stage depends on: changing the panel must not rerun the evidence."""
    return lambda config: {t: getattr(config, t) for t in tables}


STAGES: tuple[Stage[Any], ...] = (
    Stage(BUNDLE, "Bundle checks", "2", (), bundle_stage, config_inputs=_config("boards", "agents", "bundle")),
    Stage(AUDIT, "Log audit", "2", (BUNDLE,), audit_stage, extra_inputs=audit_inputs,
          config_inputs=_config("rules", "agents")),
    # The benchmark before the evidence: the behaviour that decides novelty and the flags is measured on the
    # benchmark's own scored calls (the bank, a set of inputs a method could recognise, is the second source).
    Stage(BENCHMARK, "Board benchmark", "2", (BUNDLE,), benchmark_stage, extra_inputs=benchmark_inputs,
          config_inputs=benchmark_config, reads_rubric=False, submission_inputs=benchmark_submission,
          reads_earlier=False),
    Stage(EVIDENCE, "Evidence", "5", (BUNDLE, BENCHMARK), evidence_stage, config_inputs=_config()),
    Stage(HARNESS, "Harness verification", "4", (BUNDLE,), ledger_stage, config_inputs=_config("boards", "harness")),
    Stage(JUDGES, "Judges", "5", (BUNDLE, AUDIT, EVIDENCE, HARNESS, BENCHMARK), judges_stage,
          extra_inputs=lambda c: {"panel": panel_inputs(c), "board": board_inputs(c)}),
    Stage(VERDICT, "Verdict", "2", (BUNDLE, AUDIT, EVIDENCE, HARNESS, JUDGES), verdict_stage,
          extra_inputs=family_offsets),
    # Points read other submissions' results from the store, which no input hash covers: never cached.
    Stage(POINTS, "Points", "2", (VERDICT, BENCHMARK), points_stage, cacheable=False),
)
# To add a stage: one module holding its output model, its StageKey and its STAGE (a Stage), and its line here.
# reviewbench.stagelist.STAGE_NAMES (the CLI's import-free list) names the built-in ones in this order (tested).
