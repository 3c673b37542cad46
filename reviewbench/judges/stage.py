"""The pipeline's judges stage: inputs from the upstream stages, the panel run, its result as stage data."""

from __future__ import annotations

import asyncio

from reviewbench.findings import Finding
from reviewbench.judges.inputs import EarlierRef, build_inputs
from reviewbench.judges.panel import PanelRunner, default_provider, resolve_panel
from reviewbench.pipeline import StageContext, StageOutput


def family_offsets(ctx: StageContext) -> dict[str, dict[str, float]] | None:
    """The panel's calibrated per-family offsets, when the rubric subtracts them and the arena names a report."""
    if not ctx.rubric.tie_break.subtract_family_offsets or not ctx.arena.config.panel.calibration:
        return None
    from reviewbench.calibrate.report import load_offsets

    return load_offsets(ctx.arena.root / ctx.arena.config.panel.calibration)


def panel_inputs(ctx: StageContext) -> dict:
    """What decides the panel besides the bundle: which judges actually run (API keys present or not), and the
    family offsets the tie-break subtracts."""
    return {**resolve_panel(ctx.arena.config.panel).model_dump(mode="json"), "offsets": family_offsets(ctx)}


def evidence_lines(ctx: StageContext) -> list[str]:
    lines = []
    for name in ("evidence", "harness"):
        out = ctx.outputs.get(name)
        if out is None:
            continue
        if out.status != "ok":
            lines.append(f"{name}: not run — {out.reason}")
            continue
        lines.append(f"{name}: {out.summary}")
        lines += [f"- {f.message}" for f in out.findings[:20]]
        lines += list(out.data.get("digest", []))
    return lines


def judges_stage(ctx: StageContext, make_provider=default_provider) -> StageOutput:
    b = ctx.bundle
    board = ctx.arena.config.board(b.board) if b.board else None
    audit = ctx.outputs.get("audit")
    inputs = build_inputs(
        submission_id=b.id, board=b.board, board_setting=board.setting if board else "",
        method_src=b.method.source, description=b.description.text,
        audit_summary=audit.summary if audit is not None and audit.status == "ok" else None,
        audit_findings=[f.model_dump() for f in audit.findings] if audit is not None else [],
        evidence_lines=evidence_lines(ctx),
        earlier=[EarlierRef(id=e.id, agent=e.agent, board=e.board, short_name=e.short_name, path=e.path)
                 for e in ctx.earlier],
        log_dir=ctx.arena.logs_dir / b.agent)
    panel = resolve_panel(ctx.arena.config.panel)
    runner = PanelRunner(inputs=inputs, rubric=ctx.rubric, author_family=ctx.author_family, store=ctx.store,
                         make_provider=make_provider, family_offsets=family_offsets(ctx))
    result = asyncio.run(runner.run(panel))
    findings = [Finding(code="judges.injection", severity="warning", location=f.location,
                        message=f"hidden instruction to the reviewer ({f.kind}) removed before judging: {f.text}")
                for f in inputs.injection]
    for o in result.outcomes:
        if o.verdict is None:
            findings.append(Finding(code="judges.no_verdict", severity="error",
                                    message=f"judge {o.judge_id} gave no verdict: {o.error}"))
        for bad in o.invalid_outputs:
            findings.append(Finding(code="judges.invalid_output", severity="info",
                                    message=f"judge {o.judge_id}: invalid output retried: {bad}"))
    verdicts = [o.verdict.model_dump(mode="json") for o in result.outcomes if o.verdict is not None]
    if not verdicts:
        return StageOutput(status="failed", reason="; ".join(f"{o.judge_id}: {o.error}" for o in result.outcomes),
                           findings=findings)
    cost = result.usage.cost_usd
    summary = (f"{len(verdicts)} judge runs ({', '.join(o.judge_id + (' (cached)' if o.cached else '') for o in result.outcomes)}); "
               f"tie-break {'run: ' + '; '.join(result.tie_break.reasons) if result.tie_break.needed else 'not needed'}; "
               f"{result.usage.input_tokens} in / {result.usage.output_tokens} out tokens, "
               + ("cost unknown" if cost is None else f"${cost:.4f}"))
    data = {
        "panel_note": result.note, "local": result.local, "verdicts": verdicts,
        "criteria": [c.id for c in ctx.rubric.criteria],
        "outcomes": [o.model_dump(mode="json", exclude={"exchanges"}) for o in result.outcomes],
        "tie_break": result.tie_break.model_dump(mode="json"), "usage": result.usage.model_dump(mode="json"),
        "corpus": result.corpus, "injection": [f.model_dump() for f in inputs.injection],
    }
    return StageOutput(status="ok", summary=summary, findings=findings, data=data)
