"""The stages of a review, registered in one place, in the order data flows:
bundle -> audit -> evidence -> harness verification -> judges -> verdict -> points (the report follows).

A stage that cannot run here says so with its reason (status ``not_run``); it is never skipped silently
and never produces invented results.
"""

from __future__ import annotations

from datetime import datetime, timezone

from reviewbench.description import SECTION_TITLES
from reviewbench.findings import Finding
from reviewbench.evidence.ledger_stage import ledger_stage
from reviewbench.evidence.stage import evidence_stage
from reviewbench.flags.rule_violation import rule_violation_flags
from reviewbench.judges.stage import family_offsets, judges_stage, panel_inputs
from reviewbench.logs.arena_audit import audit_agent
from reviewbench.pipeline import Stage, StageContext, StageOutput
from reviewbench.bars import load_bars
from reviewbench.points import BoardEntry, board_best, score_submission
from reviewbench.verdict import FlagClaim, JudgeVerdict, decide


def bundle_stage(ctx: StageContext) -> StageOutput:
    b = ctx.bundle
    cls = b.method.candidate
    present = [SECTION_TITLES[k] for k in SECTION_TITLES if k in b.description.sections]
    data = {
        "id": b.id, "agent": b.agent, "board": b.board, "content_hash": b.content_hash,
        "files": [f.model_dump() for f in b.files],
        "meta": b.meta.model_dump(mode="json"),
        "sections_present": present,
        "sections_missing": [t for k, t in SECTION_TITLES.items() if k not in b.description.sections],
        "method_class": cls.model_dump() if cls else None,
        "imports": b.method.imports,
        "claims": [c.model_dump() for c in b.claims],
        "board_known": b.board is None or ctx.arena.config.board(b.board) is not None,
    }
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


def _tree_fingerprint(folder) -> list:
    if not folder.is_dir():
        return []
    return sorted((str(p.relative_to(folder)), st.st_size, st.st_mtime_ns)
                  for p in folder.rglob("*") if p.is_file() for st in [p.stat()])


def audit_inputs(ctx: StageContext) -> list:
    """The agent's log files and every submission's metadata (the quota counts them)."""
    return [_tree_fingerprint(ctx.arena.logs_dir / ctx.bundle.agent),
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


def audit_stage(ctx: StageContext) -> StageOutput:
    agent = ctx.bundle.agent
    report = audit_agent(ctx.arena, agent)
    if report is None:
        return StageOutput(status="not_run", reason=f"no logs for {agent}: {ctx.arena.logs_dir / agent} is missing")
    root = f"{ctx.arena.root}/"
    report.findings = [f.model_copy(update={"source": f.source.removeprefix(root)}) for f in report.findings]
    start, end = submission_window(ctx)
    in_window, findings = [], []
    for f in report.findings:
        when = f.time and _parse_time(f.time)
        inside = when is None or ((start is None or when > start) and (end is None or when <= end))
        note = "" if inside else (" (after this submission)" if end and when > end
                                  else " (before the previous submission: counted there)")
        if inside:
            in_window.append(f)
        sev = ("error" if f.severity == "violation" else "warning") if inside else "info"
        findings.append(Finding(code=f"audit.{f.category}", severity=sev, message=f"{f.rule}{note}: {f.evidence}",
                                location=f.source))
    flags = rule_violation_flags(in_window, agent)
    st = report.stats
    n_viol = sum(1 for f in in_window if f.severity == "violation")
    window = (f"since {start:%Y-%m-%d %H:%M}" if start else "up to") + (f" until {end:%Y-%m-%d %H:%M}" if end else "")
    summary = (f"{st.events} tool calls and connections in {st.files} files ({st.parse_warnings} parse warnings); "
               f"{n_viol} violations and {len(in_window) - n_viol} warnings {window.strip()} (the window this "
               f"submission answers for), {len(report.findings) - len(in_window)} outside it")
    data = report.model_dump(mode="json", by_alias=True)
    data["candidate_flags"] = [c.model_dump(mode="json") for c in flags]
    return StageOutput(status="ok", summary=summary, findings=findings, data=data)


def _candidate_flags(ctx: StageContext) -> list[FlagClaim]:
    flags: list[FlagClaim] = []
    for name in ("audit", "evidence", "harness"):
        flags += [FlagClaim.model_validate(f) for f in ctx.data(name).get("candidate_flags", [])]
    return flags


def verdict_stage(ctx: StageContext) -> StageOutput:
    verdicts = [JudgeVerdict.model_validate(v) for v in ctx.data("judges").get("verdicts", [])]
    corpus = ctx.data("judges").get("corpus")
    final = decide(verdicts, ctx.rubric, ctx.author_family, _candidate_flags(ctx), corpus=corpus,
                   family_offsets=family_offsets(ctx))
    errors = [f for f in ctx.outputs["bundle"].findings if f.severity == "error"] if "bundle" in ctx.outputs else []
    if final.status == "no_judges":
        summary = "no verdict on quality: no judge ran"
    else:
        scores = ", ".join(f"{k} {v:g}" for k, v in final.scores.items() if v is not None)
        summary = f"{final.status}: {scores}; judge points {final.judge_points:g}"
    if final.standing_flags:
        summary += "; flags: " + ", ".join(f.flag for f in final.standing_flags)
    data = final.model_dump(mode="json")
    data["bundle_errors"] = [e.model_dump() for e in errors]
    return StageOutput(status="ok", summary=summary, data=data)


def points_stage(ctx: StageContext) -> StageOutput:
    verdict = ctx.data("verdict")
    if not verdict:
        return StageOutput(status="not_run", reason="needs the verdict stage")
    b = ctx.bundle
    board = b.board if b.board and ctx.arena.config.board(b.board) else None
    measured_raw = ctx.data("harness").get("board_entry")
    measured = BoardEntry.model_validate(measured_raw) if measured_raw else None
    earlier = earlier_board_entries(ctx, board)
    rs_name, rules = ctx.rubric.rule_set(ctx.arena.config.points.rule_set)
    pts = score_submission(
        submission=b.id, agent=b.agent, board=board, judge_points=verdict.get("judge_points"),
        novelty=(verdict.get("scores") or {}).get("novelty"), flagged=bool(verdict.get("standing_flags")),
        measured=measured, earlier=earlier, rules=rules, rule_set_name=rs_name, flag_effect=ctx.rubric.flag_effect,
    )
    if board is None:
        pts.reasons.insert(0, "no valid board: no board points")
    elif (best := board_best(earlier)) is not None:
        pts.reasons.append(f"board {board}'s current best: {best.id} (mean score {best.mean:.3f} over "
                           f"{len(best.item_scores)} items x budgets)")
    summary = f"{pts.total:g} points" + (f" (agent penalty -{pts.penalty:g})" if pts.penalty else "")
    return StageOutput(status="ok", summary=summary, data=pts.model_dump(mode="json"))


def earlier_board_entries(ctx: StageContext, board: str | None) -> list[BoardEntry]:
    """The board's baselines (its starting bar) and earlier submissions, with measured results and flags."""
    if board is None:
        return []
    flagged = {p["submission"]: p.get("flagged", False) for p in ctx.store.all_points()}
    spec = ctx.arena.config.board(board)
    out: list[BoardEntry] = load_bars(ctx.arena.root, board, spec.bars if spec else None)
    for e in ctx.earlier:
        if e.board != board:
            continue
        harness = ctx.store.latest_stage(e.id, "harness")
        scores = (harness.payload.get("data", {}).get("board_entry") or {}).get("item_scores", {}) if harness else {}
        out.append(BoardEntry(id=e.id, agent=e.agent, kind="submission", board=board, submitted_at=e.submitted_at,
                              item_scores=scores, flagged=flagged.get(e.id, False)))
    return out


STAGES: tuple[Stage, ...] = (
    Stage("bundle", "Bundle checks", "1", (), bundle_stage),
    Stage("audit", "Log audit", "1", ("bundle",), audit_stage, extra_inputs=audit_inputs),
    Stage("evidence", "Evidence", "2", ("bundle",), evidence_stage),
    Stage("harness", "Harness verification", "2", ("bundle",), ledger_stage),
    Stage("judges", "Judges", "2", ("bundle", "audit", "evidence", "harness"), judges_stage,
          extra_inputs=panel_inputs),
    Stage("verdict", "Verdict", "1", ("bundle", "audit", "evidence", "harness", "judges"), verdict_stage,
          extra_inputs=family_offsets),
    # Points read other submissions' results from the store, which no input hash covers: never cached.
    Stage("points", "Points", "1", ("verdict", "harness"), points_stage, cacheable=False),
)
STAGE_NAMES = tuple(s.name for s in STAGES)
