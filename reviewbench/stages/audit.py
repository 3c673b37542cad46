"""The log audit stage: the submitting agent's logs read against the arena's rules, for the window this submission
answers for (after the agent's previous submission, up to this one); violations raise RULE_VIOLATION."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from reviewbench.findings import Finding
from reviewbench.flags.rule_violation import rule_violation_flags
from reviewbench.logs.arena_audit import audit_agent
from reviewbench.logs.audit import AuditReport
from reviewbench.pipeline import Stage, StageContext, StageKey, StageOutput, config_tables
from reviewbench.stages.bundle import BUNDLE
from reviewbench.verdict import FlagClaim


class AuditData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    report: AuditReport
    window_start: datetime | None  # the agent's previous submission: what this one answers for starts after it
    window_end: datetime | None
    in_window: int  # findings inside that window
    candidate_flags: list[FlagClaim]


AUDIT = StageKey("audit", AuditData)


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


STAGE = Stage(AUDIT, "Log audit", (BUNDLE,), audit_stage, extra_inputs=audit_inputs,
              config_inputs=config_tables("rules", "agents"), code=("reviewbench.logs", "reviewbench.flags.rule_violation"))
