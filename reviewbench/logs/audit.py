"""Run the audit over files and folders: detect each file's format, stream its events through the rules.

Network logs go first so that their IP -> host pairs are known when tool calls connect to raw IPs. The
same code serves ``review audit`` and the review pipeline's audit stage.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, Field

from reviewbench.arena import Rules
from reviewbench.errors import UserError
from reviewbench.logs.claude import KNOWN_TYPES, parse_claude
from reviewbench.logs.codex import ENVELOPE_TYPES, parse_codex
from reviewbench.logs.events import Event, ParseStats
from reviewbench.logs.generic import parse_generic
from reviewbench.logs.network import SQUID_LINE, parse_connlog, parse_har, parse_squid
from reviewbench.logs.rules import AuditFinding, Auditor, quota_findings

Format = Literal["claude", "codex", "jsonl", "squid", "har", "connlog"]
FORMATS: tuple[str, ...] = ("claude", "codex", "jsonl", "squid", "har", "connlog")
NETWORK_FORMATS = {"squid", "har", "connlog"}
AUDIT_SCHEMA = "reviewbench.audit/1"
SKIP_SUFFIXES = {".md", ".txt.meta", ".py", ".toml", ".png", ".jpg", ".gz", ".zip", ".sqlite"}


class AuditStats(BaseModel):
    files: int
    events: int
    parse_warnings: int
    bytes: int
    seconds: float
    lines: int = 0
    duplicates: int = 0
    skipped_records: dict[str, int] = Field(default_factory=dict)
    by_format: dict[str, int] = Field(default_factory=dict)
    events_by_tool: dict[str, int] = Field(default_factory=dict)


class WarningOut(BaseModel):
    source: str
    message: str


class AuditReport(BaseModel):
    schema_: Literal["reviewbench.audit/1"] = Field(default=AUDIT_SCHEMA, alias="schema")
    findings: list[AuditFinding]
    stats: AuditStats
    warnings: list[WarningOut] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    model_config = {"populate_by_name": True}

    def violations(self) -> list[AuditFinding]:
        return [f for f in self.findings if f.severity == "violation"]


def sniff(path: Path) -> Format | None:
    """The format of a file from its name and first lines; None when it is none of ours."""
    if path.suffix.lower() == ".har":
        return "har"
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return None
    if head.lstrip().startswith(b"{") and b'"log"' in head[:4096] and b'"entries"' in head:
        return "har"
    for raw in head.split(b"\n")[:20]:
        line = raw.strip()
        if not line:
            continue
        if SQUID_LINE.match(line):
            return "squid"
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(obj, dict):
            continue
        t = obj.get("type")
        if "payload" in obj and t in ENVELOPE_TYPES:
            return "codex"
        if "record_type" in obj or ("instructions" in obj and "id" in obj and "type" not in obj):
            return "codex"
        if t in ("function_call", "function_call_output", "reasoning", "local_shell_call", "custom_tool_call"):
            return "codex"
        if t in KNOWN_TYPES or "sessionId" in obj or ("uuid" in obj and "message" in obj):
            return "claude"
        if "tool" in obj:
            return "jsonl"
        if any(k in obj for k in ("host", "dst_host", "sni", "dst_ip")):
            return "connlog"
    return None


def collect_files(paths: Iterable[Path], fmt: str, stats: ParseStats) -> list[tuple[Path, Format]]:
    """Files to audit with their formats; an explicitly named unusable file is an error."""
    out: list[tuple[Path, Format]] = []
    for p in paths:
        if not p.exists():
            raise UserError(p, "no such file or folder")
        if p.is_file():
            f = fmt if fmt != "auto" else sniff(p)
            if f is None:
                raise UserError(p, "not a log format reviewbench reads (claude, codex, jsonl, squid, har, connlog); "
                                   "use --format to force one")
            out.append((p, f))  # type: ignore[arg-type]
            continue
        for child in sorted(p.rglob("*")):
            if not child.is_file() or any(part.startswith(".") for part in child.relative_to(p).parts):
                continue
            if child.suffix.lower() in SKIP_SUFFIXES or child.name.endswith(".meta.json"):
                continue
            f = fmt if fmt != "auto" else sniff(child)
            if f is None:
                stats.warn(f"{child}:0", "format not recognised; file skipped")
                continue
            out.append((child, f))  # type: ignore[arg-type]
    out.sort(key=lambda pf: (pf[1] not in NETWORK_FORMATS, str(pf[0])))
    return out


def iter_events(files: list[tuple[Path, Format]], stats: ParseStats, agent_of) -> Iterator[Event]:
    seen_claude: set[int] = set()
    seen_codex: set[int] = set()
    for path, fmt in files:
        stats.files += 1
        agent = agent_of(path)
        if fmt == "claude":
            yield from parse_claude(path, stats, agent, seen_claude)
        elif fmt == "codex":
            yield from parse_codex(path, stats, agent, seen_codex)
        elif fmt == "jsonl":
            yield from parse_generic(path, stats, agent)
        elif fmt == "squid":
            yield from parse_squid(path, stats, agent)
        elif fmt == "har":
            yield from parse_har(path, stats, agent)
        else:
            yield from parse_connlog(path, stats, agent)


def run_audit(
    paths: list[Path],
    rules: Rules = Rules(),
    *,
    fmt: str = "auto",
    agent: str | None = None,
    logs_root: Path | None = None,
    agent_ids: Iterable[str] = (),
    submissions: Iterable[tuple[str, str, datetime, str]] = (),
    only_agent: str | None = None,
) -> AuditReport:
    """Audit logs. The agent of a file is ``agent``, else its folder under ``logs_root`` (logs/<agent>/...)."""
    if fmt not in ("auto", *FORMATS):
        raise UserError(None, f"unknown format {fmt!r} (auto, {', '.join(FORMATS)})")
    t0 = time.perf_counter()
    stats = ParseStats()
    files = collect_files(paths, fmt, stats)
    root = logs_root.resolve() if logs_root else None

    def agent_of(path: Path) -> str | None:
        if agent:
            return agent
        if root is not None:
            try:
                return path.resolve().relative_to(root).parts[0]
            except (ValueError, IndexError):
                return None
        return None

    auditor = Auditor(rules, agent_ids)
    findings: list[AuditFinding] = []
    seen: set[tuple[str, str, str]] = set()
    by_format: dict[str, int] = {}
    by_tool: dict[str, int] = {}
    for path, f in files:
        by_format[f] = by_format.get(f, 0) + 1
    for ev in iter_events(files, stats, agent_of):
        stats.events += 1
        by_tool[ev.tool] = by_tool.get(ev.tool, 0) + 1
        for finding in auditor.check(ev):
            if only_agent and finding.agent not in (only_agent, None):
                continue
            key = (finding.category, finding.source, finding.rule)
            if key not in seen:
                seen.add(key)
                findings.append(finding)
    subs = [s for s in submissions if not only_agent or s[0] == only_agent]
    findings += quota_findings(subs, rules.submissions_per_24h)
    notes = []
    if auditor.skipped_other_agent:
        notes.append(f"{auditor.skipped_other_agent} accesses to agent folders not judged: the log's agent is "
                     f"unknown (pass --agent or --arena)")
    if not subs:
        notes.append("quota not checked: no official submissions known (needs --arena)")
    report = AuditReport(
        findings=findings,
        stats=AuditStats(files=stats.files, events=stats.events, parse_warnings=stats.warnings_total,
                         bytes=stats.bytes, seconds=round(time.perf_counter() - t0, 3), lines=stats.lines,
                         duplicates=stats.duplicates, skipped_records=stats.skipped_records, by_format=by_format,
                         events_by_tool=dict(sorted(by_tool.items()))),
        warnings=[WarningOut(source=w.source, message=w.message) for w in stats.warnings],
        notes=notes,
    )
    return report
